// Approvals in the editor: a `write` or `edit` approval opens VS Code's diff view of the
// proposed change (two read-only virtual documents), with Allow / Deny in the editor title;
// the view closes when the approval is answered anywhere. A status bar item counts the
// approvals that wait.

import * as path from "path";
import * as vscode from "vscode";
import { ApprovalDecision, SessionEvent } from "./protocol";
import { proposedChange } from "./proposal";
import { AttachedSession } from "./session";

/** The URI scheme of the proposed-change documents. */
export const PROPOSED_SCHEME = "rein-proposed";

interface Open {
  session: AttachedSession;
  before?: vscode.Uri;
  after?: vscode.Uri;
  title?: string;
}

/** Tracks the approvals that wait and their diff views. */
export class Approvals implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly open = new Map<string, Open>();
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 100);
  private readonly registration: vscode.Disposable;

  constructor() {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, this);
    this.statusItem.command = "rein.chat.focus";
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? "";
  }

  /** Records a new approval; for `write` and `edit` opens the diff of what it proposes. */
  async add(session: AttachedSession, request: SessionEvent): Promise<void> {
    const requestId = request.request_id as string;
    const entry: Open = { session };
    this.open.set(requestId, entry);
    this.updateStatus();
    const toolName = request.tool_name as string;
    if (toolName !== "write" && toolName !== "edit") return;
    const given = (request.arguments as Record<string, unknown> | undefined)?.path;
    if (typeof given !== "string") return;
    const file = path.resolve(session.state.cwd, given);
    let current: string | undefined;
    try {
      current = Buffer.from(await vscode.workspace.fs.readFile(vscode.Uri.file(file))).toString("utf8");
    } catch {
      current = undefined; // a new file
    }
    const change = proposedChange(toolName, request.arguments, current);
    if (!change || !this.open.has(requestId)) return;
    const uri = (side: string) =>
      vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: file, query: `request=${requestId}&side=${side}` });
    entry.before = uri("before");
    entry.after = uri("after");
    entry.title = `${given} (proposed by rein)`;
    this.texts.set(entry.before.toString(), change.before);
    this.texts.set(entry.after.toString(), change.after);
    await this.showDiff(requestId);
  }

  /** Opens (again) the diff view of `requestId`, if it has one. */
  async showDiff(requestId: string): Promise<void> {
    const entry = this.open.get(requestId);
    if (!entry?.before || !entry.after) return;
    await vscode.commands.executeCommand("vscode.diff", entry.before, entry.after, entry.title, {
      preview: false,
    });
  }

  /** Forgets an answered approval and closes its diff view. */
  async resolved(requestId: string): Promise<void> {
    const entry = this.open.get(requestId);
    if (!entry) return;
    this.open.delete(requestId);
    this.updateStatus();
    if (entry.before) this.texts.delete(entry.before.toString());
    if (entry.after) this.texts.delete(entry.after.toString());
    const tabs = vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .filter((tab) => requestOf(tab.input) === requestId);
    if (tabs.length) await vscode.window.tabGroups.close(tabs);
  }

  /** Answers the approval whose diff is `uri` (or the active diff view). */
  async answer(decision: ApprovalDecision, uri?: vscode.Uri): Promise<void> {
    const requestId =
      (uri?.scheme === PROPOSED_SCHEME ? requestOfUri(uri) : undefined) ??
      requestOf(vscode.window.tabGroups.activeTabGroup.activeTab?.input);
    const entry = requestId ? this.open.get(requestId) : undefined;
    if (!requestId || !entry) {
      void vscode.window.showInformationMessage("rein: that approval is no longer open.");
      return;
    }
    const taken = await entry.session.respond(requestId, decision);
    if (!taken) void vscode.window.showInformationMessage("rein: another client answered that approval.");
    await this.resolved(requestId);
  }

  /** Forgets every approval of `session` (detached or disconnected). */
  async clear(): Promise<void> {
    for (const requestId of [...this.open.keys()]) await this.resolved(requestId);
  }

  private updateStatus(): void {
    const count = this.open.size;
    this.statusItem.text = `$(shield) rein: ${count} approval${count === 1 ? "" : "s"} waiting`;
    if (count) this.statusItem.show();
    else this.statusItem.hide();
  }

  dispose(): void {
    this.registration.dispose();
    this.statusItem.dispose();
    this.changed.dispose();
  }
}

function requestOfUri(uri: vscode.Uri): string | undefined {
  return new URLSearchParams(uri.query).get("request") ?? undefined;
}

function requestOf(input: unknown): string | undefined {
  if (input instanceof vscode.TabInputTextDiff && input.modified.scheme === PROPOSED_SCHEME) {
    return requestOfUri(input.modified);
  }
  return undefined;
}
