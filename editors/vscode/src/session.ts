// An attached session: its transcript kept up to date from the daemon's events, and the
// actions a user takes on it. No `vscode` import; the extension supplies the hooks.

import {
  ApprovalDecision,
  ReinClient,
  RpcError,
  SessionEvent,
  SessionState,
  SubscriptionItem,
} from "./protocol";
import { Transcript } from "./transcript";

/** What the editor does when the session changes. */
export interface SessionHooks {
  /** The transcript or the running state changed. */
  onChange(session: AttachedSession): void;
  /** A tool call waits for approval. */
  onApproval(session: AttachedSession, request: SessionEvent): void;
  /** A tool changed a file (write or edit finished); `path` as the tool was given it. */
  onFileChanged?(session: AttachedSession, path: string): void;
  /** An approval was answered (by any client) or expired. */
  onApprovalResolved?(session: AttachedSession, requestId: string): void;
}

/** What the status line shows: the model and what the session has spent so far. */
export interface SessionStatus {
  /** `provider/model`. */
  model: string;
  /** Tokens of every request so far. */
  totalTokens: number;
  /** Cost so far in US dollars. */
  cost: number;
  /** Estimated tokens the next request sends, and the model's window. */
  contextTokens?: number;
  contextWindow?: number;
}

function statusOf(state: SessionState): SessionStatus {
  const usage = state.usage as { total_tokens?: number; cost?: { total?: number } } | undefined;
  return {
    model: `${state.model.provider}/${state.model.model}`,
    totalTokens: usage?.total_tokens ?? 0,
    cost: usage?.cost?.total ?? 0,
    contextTokens: state.context_tokens as number | undefined,
    contextWindow: state.context_window as number | undefined,
  };
}

/** One session followed by the editor. */
export class AttachedSession {
  readonly transcript = new Transcript();
  /** Arguments of the tool calls executing now, so a finished write or edit names its file. */
  private readonly toolArgs = new Map<string, Record<string, unknown>>();
  private subscription?: string;
  /** Model and spending, refreshed after every run and model change. */
  status: SessionStatus;
  private settledWaiters: Array<() => void> = [];

  private constructor(
    readonly client: ReinClient,
    readonly state: SessionState,
    private readonly hooks: SessionHooks,
  ) {
    this.status = statusOf(state);
  }

  /** The session id. */
  get sessionId(): string {
    return this.state.session_id;
  }

  /** Creates a session for `cwd` and attaches to it. */
  static async create(client: ReinClient, cwd: string, hooks: SessionHooks): Promise<AttachedSession> {
    const state = await client.createSession(cwd);
    return AttachedSession.follow(client, state, hooks);
  }

  /** Attaches to an existing session: its history first, then its live events. */
  static async attach(
    client: ReinClient,
    sessionId: string,
    hooks: SessionHooks,
  ): Promise<AttachedSession> {
    const state = await client.openSession(sessionId);
    return AttachedSession.follow(client, state, hooks);
  }

  private static async follow(
    client: ReinClient,
    state: SessionState,
    hooks: SessionHooks,
  ): Promise<AttachedSession> {
    const session = new AttachedSession(client, state, hooks);
    await session.resync();
    return session;
  }

  /** Reloads the history and subscribes from its `last_seq` (also after a lag). */
  private async resync(): Promise<void> {
    const history = await this.client.call<{ messages: never[]; last_seq: number }>(
      "session/messages",
      // Only the recent history is shown; the daemon sends it newest page first.
      { session_id: this.sessionId, limit: 200 },
    );
    const current = await this.client.call<SessionState>("session/state", {
      session_id: this.sessionId,
    });
    this.transcript.load(history.messages, history.last_seq);
    this.transcript.running = current.running;
    this.status = statusOf(current);
    this.subscription = await this.client.subscribe(this.sessionId, history.last_seq, (item) =>
      this.receive(item),
    );
    this.hooks.onChange(this);
  }

  private receive(item: SubscriptionItem): void {
    if (item.type === "lagged" || item.type === "resync_required") {
      this.subscription = undefined;
      void this.resync();
      return;
    }
    if (item.type !== "event" || !item.event) return;
    const event = item.event;
    const changed = this.transcript.apply(event, item.seq);
    if (event.kind === "approval_requested") this.hooks.onApproval(this, event);
    if (event.kind === "tool_execution_start") {
      this.toolArgs.set(event.tool_call_id as string, event.arguments as Record<string, unknown>);
    }
    if (event.kind === "tool_execution_end") {
      const args = this.toolArgs.get(event.tool_call_id as string);
      this.toolArgs.delete(event.tool_call_id as string);
      const changesFile = ["write", "edit"].includes(event.tool_name as string);
      if (changesFile && typeof args?.path === "string") this.hooks.onFileChanged?.(this, args.path);
    }
    if (event.kind === "approval_resolved") {
      this.hooks.onApprovalResolved?.(this, event.request_id as string);
    }
    if (event.kind === "agent_end" || event.kind === "model_changed") void this.refreshStatus();
    if (event.kind === "settled") {
      for (const waiter of this.settledWaiters.splice(0)) waiter();
    }
    if (changed) this.hooks.onChange(this);
  }

  /** Reads the session's model and usage again (`session/state`). */
  private async refreshStatus(): Promise<void> {
    try {
      const current = await this.client.call<SessionState>("session/state", {
        session_id: this.sessionId,
      });
      this.status = statusOf(current);
      this.hooks.onChange(this);
    } catch {
      // The connection closed; the extension shows that through its close handler.
    }
  }

  /** Sends a prompt (queued as a follow-up when the session is running); returns the run id. */
  prompt(text: string): Promise<string> {
    return this.client.prompt(this.sessionId, text);
  }

  /** Steers the running run. */
  steer(text: string): Promise<unknown> {
    return this.client.steer(this.sessionId, text);
  }

  /** Cancels the running run. */
  cancel(): Promise<boolean> {
    return this.client.cancel(this.sessionId);
  }

  /** Answers an approval; false when another client answered first. */
  async respond(requestId: string, decision: ApprovalDecision): Promise<boolean> {
    try {
      await this.client.respondApproval(this.sessionId, requestId, decision);
      return true;
    } catch (error) {
      if (error instanceof RpcError && error.kind === "approval_not_found") return false;
      throw error;
    }
  }

  /** Resolves at the next `settled` event (at once when the session is idle). */
  waitUntilSettled(): Promise<void> {
    if (!this.transcript.running) return Promise.resolve();
    return new Promise((resolve) => this.settledWaiters.push(resolve));
  }

  /** Stops following the session. */
  async detach(): Promise<void> {
    if (this.subscription) await this.client.unsubscribe(this.subscription);
    this.subscription = undefined;
  }
}
