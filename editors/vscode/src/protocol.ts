// A client of the rein daemon protocol (docs/protocol.md): JSON-RPC 2.0, one JSON message
// per line, over the daemon's Unix socket or through a `rein stdio` child process.
//
// This module has no `vscode` import, so plain Node can load and test it.

import { ChildProcess, spawn } from "child_process";
import { EventEmitter } from "events";
import * as net from "net";

/** The protocol version this client speaks. */
export const PROTOCOL_VERSION = "1.0";

/** An error answer from the daemon. `kind` is the stable `data.kind` word. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly kind: string,
    readonly data: unknown,
  ) {
    super(message);
    this.name = "RpcError";
  }
}

/** Something that carries lines both ways. */
interface Transport {
  write(line: string): void;
  close(): void;
}

/** A session event as the daemon sends it (see "Session events" in docs/protocol.md). */
export interface SessionEvent {
  kind: string;
  [field: string]: unknown;
}

/** One item of a session subscription. */
export interface SubscriptionItem {
  type: "event" | "lagged" | "resync_required" | string;
  session_id: string;
  seq?: number;
  timestamp?: number;
  event?: SessionEvent;
}

/** The parts of `SessionState` the editors use. */
export interface SessionState {
  session_id: string;
  cwd: string;
  model: { provider: string; model: string };
  approval_policy: string;
  running: boolean;
  last_seq: number;
  name?: string | null;
  [field: string]: unknown;
}

/** A listed session. */
export interface SessionSummary {
  session_id: string;
  cwd: string;
  updated: string;
  name?: string | null;
  first_prompt?: string | null;
  running?: boolean;
}

/** An approval decision. */
export type ApprovalDecision = "allow_once" | "allow_session" | "deny";

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/**
 * One connection to the daemon. Calls return promises matched by id; subscription items are
 * delivered to the callback given to `subscribe`. Emits `close` when the connection ends.
 */
export class ReinClient extends EventEmitter {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly subscriptions = new Map<string, (item: SubscriptionItem) => void>();
  private buffered = "";
  private closed = false;

  private constructor(private readonly transport: Transport) {
    super();
  }

  /** Connects to the daemon's socket (it must be running). */
  static connectSocket(socketPath: string): Promise<ReinClient> {
    return new Promise((resolve, reject) => {
      const socket = net.createConnection(socketPath);
      const client = new ReinClient({
        write: (line) => socket.write(line),
        close: () => socket.end(),
      });
      socket.setEncoding("utf8");
      socket.once("connect", () => resolve(client));
      socket.once("error", (error) => {
        reject(error);
        client.shutdown(error);
      });
      socket.on("data", (chunk: string) => client.receive(chunk));
      socket.on("close", () => client.shutdown(new Error("the daemon closed the connection")));
    });
  }

  /**
   * Spawns `rein stdio` (which starts the daemon when none runs) and talks through it.
   * `rein` is the binary; `env` its environment.
   */
  static spawnStdio(rein: string, env?: NodeJS.ProcessEnv): ReinClient {
    const child: ChildProcess = spawn(rein, ["stdio"], { env, stdio: ["pipe", "pipe", "pipe"] });
    const client = new ReinClient({
      write: (line) => child.stdin?.write(line),
      close: () => child.stdin?.end(),
    });
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (chunk: string) => client.receive(chunk));
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (text: string) => client.emit("stderr", text));
    child.on("error", (error) => client.shutdown(error));
    child.on("exit", () => client.shutdown(new Error("rein stdio exited")));
    return client;
  }

  /** Calls `method` and resolves with its result, or rejects with an `RpcError`. */
  call<T = unknown>(method: string, params: object = {}): Promise<T> {
    if (this.closed) return Promise.reject(new Error("the connection is closed"));
    const id = this.nextId++;
    const request = { jsonrpc: "2.0", id, method, params };
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.transport.write(JSON.stringify(request) + "\n");
    });
  }

  /** Introduces the client; `approvals` says a person answers approval requests here. */
  initialize(clientName: string, approvals: boolean): Promise<unknown> {
    return this.call("initialize", {
      client_name: clientName,
      client_version: "0.1.0",
      protocol_version: PROTOCOL_VERSION,
      capabilities: { approvals },
    });
  }

  /** Subscribes to a session's events after `afterSeq`; returns the subscription id. */
  async subscribe(
    sessionId: string,
    afterSeq: number | null,
    onItem: (item: SubscriptionItem) => void,
  ): Promise<string> {
    const id = await this.call<string>("session/subscribe", {
      session_id: sessionId,
      after_seq: afterSeq,
    });
    this.subscriptions.set(id, onItem);
    return id;
  }

  /** Ends a subscription. */
  async unsubscribe(subscription: string): Promise<void> {
    this.subscriptions.delete(subscription);
    await this.call("session/unsubscribe", { subscription });
  }

  /** Creates a session for `cwd`. */
  createSession(cwd: string): Promise<SessionState> {
    return this.call<SessionState>("session/create", { cwd });
  }

  /** Loads a session (or finds it loaded). */
  openSession(sessionId: string): Promise<SessionState> {
    return this.call<SessionState>("session/open", { session_id: sessionId });
  }

  /** Lists sessions, of one project when `cwd` is given. */
  async listSessions(cwd?: string): Promise<SessionSummary[]> {
    const result = await this.call<{ sessions: SessionSummary[] }>("session/list", { cwd });
    return result.sessions;
  }

  /** Sends a prompt; a busy session queues it as a follow-up. Resolves with the run id. */
  async prompt(sessionId: string, text: string): Promise<string> {
    const result = await this.call<{ run_id: string }>("session/prompt", {
      session_id: sessionId,
      text,
      when_busy: "follow_up",
    });
    return result.run_id;
  }

  /** Steers the running run. */
  steer(sessionId: string, text: string): Promise<unknown> {
    return this.call("session/steer", { session_id: sessionId, text });
  }

  /** Cancels the running run; resolves with whether there was one. */
  async cancel(sessionId: string): Promise<boolean> {
    const result = await this.call<{ cancelled: boolean }>("session/cancel", {
      session_id: sessionId,
    });
    return result.cancelled;
  }

  /** Answers an approval request. */
  respondApproval(
    sessionId: string,
    requestId: string,
    decision: ApprovalDecision,
    reason?: string,
  ): Promise<unknown> {
    return this.call("approval/respond", {
      session_id: sessionId,
      request_id: requestId,
      decision,
      reason,
    });
  }

  /** Closes the connection. */
  close(): void {
    if (!this.closed) this.transport.close();
  }

  private receive(chunk: string): void {
    this.buffered += chunk;
    let newline = this.buffered.indexOf("\n");
    while (newline >= 0) {
      const line = this.buffered.slice(0, newline).trim();
      this.buffered = this.buffered.slice(newline + 1);
      if (line) this.dispatch(line);
      newline = this.buffered.indexOf("\n");
    }
  }

  private dispatch(line: string): void {
    let message: {
      id?: number | null;
      method?: string;
      params?: { subscription?: string; result?: SubscriptionItem };
      result?: unknown;
      error?: { code: number; message: string; data?: { kind?: string } };
    };
    try {
      message = JSON.parse(line);
    } catch {
      this.emit("protocolError", new Error(`not JSON: ${line.slice(0, 200)}`));
      return;
    }
    if (message.method !== undefined) {
      const handler = this.subscriptions.get(message.params?.subscription ?? "");
      if (handler && message.params?.result) handler(message.params.result);
      this.emit("notification", message);
      return;
    }
    if (message.id === null && message.error) {
      // An error about the connection itself (refused, over a limit): the daemon closes it
      // next, so it is the answer to every call still waiting.
      const { code, message: text, data } = message.error;
      const error = new RpcError(code, text, data?.kind ?? "internal", data);
      for (const waiting of this.pending.values()) waiting.reject(error);
      this.pending.clear();
      return;
    }
    const pending = typeof message.id === "number" ? this.pending.get(message.id) : undefined;
    if (!pending || message.id === undefined || message.id === null) return;
    this.pending.delete(message.id);
    if (message.error) {
      const { code, message: text, data } = message.error;
      pending.reject(new RpcError(code, text, data?.kind ?? "internal", data));
    } else {
      pending.resolve(message.result);
    }
  }

  private shutdown(error: Error): void {
    if (this.closed) return;
    this.closed = true;
    for (const pending of this.pending.values()) pending.reject(error);
    this.pending.clear();
    this.emit("close", error);
  }
}
