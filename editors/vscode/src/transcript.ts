// Folds a session's messages and events into the items a chat view shows. No `vscode`
// import: the chat view renders these items, and Node tests check them.

import { SessionEvent } from "./protocol";

/** Where a tool call is: proposed, waiting for approval, approved, running, finished. */
export type ToolStatus = "pending" | "waiting" | "approved" | "denied" | "running" | "done" | "failed";

/** One thing shown in the chat. */
export type ChatItem =
  | { type: "user"; text: string }
  | { type: "assistant"; text: string; thinking: string }
  | {
      type: "tool";
      id: string;
      name: string;
      title: string;
      /** `waiting` while an approval for it is open. */
      status: ToolStatus;
      output: string;
      /** The exit code a command tool reported (`details.exitCode`). */
      exitCode?: number;
    }
  | {
      type: "approval";
      requestId: string;
      toolCallId: string;
      toolName: string;
      title: string;
      reason: string;
      /** Who answered and how, once answered (here or by another client). */
      decision?: string;
    }
  | { type: "notice"; text: string };

interface ContentBlock {
  type: string;
  text?: string;
  thinking?: string;
  id?: string;
  name?: string;
  arguments?: unknown;
}

interface Message {
  role: string;
  content: ContentBlock[];
  tool_call_id?: string;
  is_error?: boolean;
  details?: unknown;
}

/** The exit code in a tool result's `details` (`exitCode`, as `bash` reports it). */
function exitCodeOf(details: unknown): number | undefined {
  const code = (details as Record<string, unknown> | null | undefined)?.exitCode;
  return typeof code === "number" ? code : undefined;
}

/** A one-line title for a tool call: the tool and its main argument. */
export function toolTitle(name: string, args: unknown): string {
  const fields = (args ?? {}) as Record<string, unknown>;
  for (const key of ["path", "command", "pattern"]) {
    if (typeof fields[key] === "string") return `${name} ${fields[key] as string}`;
  }
  return name;
}

function textOf(content: ContentBlock[]): string {
  return content
    .filter((block) => block.type === "text")
    .map((block) => block.text ?? "")
    .join("");
}

/** The chat of one session. */
export class Transcript {
  readonly items: ChatItem[] = [];
  /** Whether a run is active. */
  running = false;
  /** The last event seq applied. */
  lastSeq = 0;

  /** Rebuilds the chat from stored messages (`session/messages`). */
  load(messages: Message[], lastSeq: number): void {
    this.items.length = 0;
    for (const message of messages) {
      if (message.role === "user") {
        this.items.push({ type: "user", text: textOf(message.content) });
      } else if (message.role === "assistant") {
        const assistant = this.startAssistant();
        for (const block of message.content) this.addBlock(assistant, block);
      } else if (message.role === "tool_result") {
        this.finishTool(message.tool_call_id ?? "", message);
      }
    }
    this.lastSeq = lastSeq;
  }

  /** Applies one event; returns false for events that change nothing shown. */
  apply(event: SessionEvent, seq?: number): boolean {
    if (seq !== undefined) {
      if (seq <= this.lastSeq) return false;
      this.lastSeq = seq;
    }
    switch (event.kind) {
      case "agent_start":
        this.running = true;
        return true;
      case "message_start": {
        const message = event.message as Message;
        if (message.role === "user") this.items.push({ type: "user", text: textOf(message.content) });
        else if (message.role === "assistant") this.startAssistant();
        else return false;
        return true;
      }
      case "message_update":
        return this.applyDelta(event.delta as Record<string, unknown>);
      case "tool_execution_start":
        return this.setToolStatus(event.tool_call_id as string, "running");
      case "tool_execution_update": {
        const tool = this.tool(event.tool_call_id as string);
        if (!tool) return false;
        tool.output += textOf(event.content as ContentBlock[]);
        return true;
      }
      case "tool_execution_end": {
        return this.finishTool(event.tool_call_id as string, event.result as Message);
      }
      case "approval_requested": {
        // The approval goes right before the call it gates, so the chat reads in order:
        // the request, its answer, then the tool's output.
        const toolCallId = event.tool_call_id as string;
        const approval: ChatItem = {
          type: "approval",
          requestId: event.request_id as string,
          toolCallId,
          toolName: event.tool_name as string,
          title: toolTitle(event.tool_name as string, event.arguments),
          reason: event.reason as string,
        };
        const tool = this.tool(toolCallId);
        if (tool) {
          tool.status = "waiting";
          this.items.splice(this.items.indexOf(tool), 0, approval);
        } else {
          this.items.push(approval);
        }
        return true;
      }
      case "approval_resolved": {
        const approval = this.approval(event.request_id as string);
        if (!approval) return false;
        const decision = event.decision as string;
        approval.decision = `${decision} (${event.resolved_by as string})`;
        const tool = this.tool(approval.toolCallId);
        if (tool?.status === "waiting") tool.status = decision === "deny" ? "denied" : "approved";
        return true;
      }
      case "agent_end": {
        const reason = event.reason as string;
        const error = event.error ? `: ${event.error as string}` : "";
        this.items.push({ type: "notice", text: `run ${reason}${error}` });
        return true;
      }
      case "settled":
        this.running = false;
        return true;
      default:
        return false;
    }
  }

  /** The chat as plain text, for tests and for copying. */
  toText(): string {
    return this.items
      .map((item) => {
        switch (item.type) {
          case "user":
            return `> ${item.text}`;
          case "assistant":
            return item.text;
          case "tool": {
            const exit = item.exitCode === undefined ? "" : ` (exit ${item.exitCode})`;
            return `[${item.status}] ${item.title}${exit}${item.output ? `\n${item.output}` : ""}`;
          }
          case "approval":
            return `? ${item.title}: ${item.decision ?? "waiting"}`;
          case "notice":
            return `-- ${item.text}`;
        }
      })
      .join("\n");
  }

  /** The approval item of `requestId`. */
  approval(requestId: string): Extract<ChatItem, { type: "approval" }> | undefined {
    const found = this.items.find((item) => item.type === "approval" && item.requestId === requestId);
    return found?.type === "approval" ? found : undefined;
  }

  private startAssistant(): Extract<ChatItem, { type: "assistant" }> {
    const item = { type: "assistant" as const, text: "", thinking: "" };
    this.items.push(item);
    return item;
  }

  private currentAssistant(): Extract<ChatItem, { type: "assistant" }> {
    const last = this.items[this.items.length - 1];
    return last?.type === "assistant" ? last : this.startAssistant();
  }

  private addBlock(assistant: Extract<ChatItem, { type: "assistant" }>, block: ContentBlock): void {
    if (block.type === "text") assistant.text += block.text ?? "";
    else if (block.type === "thinking") assistant.thinking += block.thinking ?? "";
    else if (block.type === "tool_call") this.addTool(block.id ?? "", block.name ?? "", block.arguments);
  }

  private applyDelta(delta: Record<string, unknown>): boolean {
    switch (delta.type) {
      case "text_delta":
        this.currentAssistant().text += delta.delta as string;
        return true;
      case "thinking_delta":
        this.currentAssistant().thinking += delta.delta as string;
        return true;
      case "tool_call_end": {
        const call = delta.call as ContentBlock;
        this.addTool(call.id ?? "", call.name ?? "", call.arguments);
        return true;
      }
      default:
        return false;
    }
  }

  private addTool(id: string, name: string, args: unknown): void {
    this.items.push({ type: "tool", id, name, title: toolTitle(name, args), status: "pending", output: "" });
  }

  private tool(id: string): Extract<ChatItem, { type: "tool" }> | undefined {
    const found = this.items.find((item) => item.type === "tool" && item.id === id);
    return found?.type === "tool" ? found : undefined;
  }

  private setToolStatus(id: string, status: "running"): boolean {
    const tool = this.tool(id);
    if (!tool) return false;
    tool.status = status;
    return true;
  }

  private finishTool(id: string, result: Message): boolean {
    const tool = this.tool(id);
    if (!tool) return false;
    tool.status = result.is_error ? "failed" : "done";
    tool.output = textOf(result.content);
    tool.exitCode = exitCodeOf(result.details);
    return true;
  }
}
