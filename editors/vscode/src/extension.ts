// The rein VS Code extension: commands to prompt, attach, steer, cancel and pick a session,
// a chat view that streams the attached session with its approvals, a diff view for proposed
// edits, and a status bar item with the model and what the session has spent. Files the
// agent writes are reloaded by VS Code's own file watcher, so no hook is needed for that.

import * as vscode from "vscode";
import { Approvals } from "./approvals";
import { ChatViewProvider } from "./chatView";
import { ApprovalDecision, ReinClient } from "./protocol";
import { AttachedSession, SessionHooks } from "./session";

let client: ReinClient | undefined;
let session: AttachedSession | undefined;
let chat: ChatViewProvider;
let approvals: Approvals;
let statusItem: vscode.StatusBarItem;

/** The daemon connection, through `rein stdio` (which starts the daemon when needed). */
async function connection(): Promise<ReinClient> {
  if (client) return client;
  const rein = vscode.workspace.getConfiguration("rein").get<string>("path") || "rein";
  const fresh = ReinClient.spawnStdio(rein);
  fresh.on("close", () => {
    if (client === fresh) {
      client = undefined;
      session = undefined;
      void approvals.clear();
      statusItem.text = "rein: disconnected";
      chat.show([], "disconnected");
    }
  });
  await fresh.initialize("rein.vscode", true);
  client = fresh;
  return fresh;
}

function projectDir(): string | undefined {
  const editor = vscode.window.activeTextEditor;
  const folder = editor
    ? vscode.workspace.getWorkspaceFolder(editor.document.uri)
    : vscode.workspace.workspaceFolders?.[0];
  return folder?.uri.fsPath;
}

/** "model · tokens · cost", e.g. `anthropic/claude-sonnet-4-5 · 4.7k tokens · $0.0059`. */
function spending(target: AttachedSession): string {
  const { model, totalTokens, cost } = target.status;
  const tokens = totalTokens >= 1000 ? `${(totalTokens / 1000).toFixed(1)}k` : `${totalTokens}`;
  return `${model} · ${tokens} tokens · $${cost.toFixed(4)}`;
}

const hooks: SessionHooks = {
  onChange(changed) {
    if (session && changed !== session) return;
    const state = changed.transcript.running ? "running" : "idle";
    chat.show(
      [...changed.transcript.items],
      `${changed.sessionId.slice(0, 13)} · ${state} · ${spending(changed)}`,
    );
    statusItem.text = `$(${changed.transcript.running ? "sync~spin" : "comment-discussion"}) rein: ${spending(changed)}`;
    statusItem.show();
  },
  onApproval(changed, request) {
    chat.reveal();
    void approvals.add(changed, request);
  },
  onApprovalResolved(_changed, requestId) {
    void approvals.resolved(requestId);
  },
};

/** Answers an approval of the attached session (from the chat's buttons). */
async function respond(requestId: string, decision: ApprovalDecision): Promise<void> {
  if (!session) return;
  const taken = await session.respond(requestId, decision);
  if (!taken) void vscode.window.showInformationMessage("rein: another client answered that approval.");
  await approvals.resolved(requestId);
}

async function attach(sessionId: string): Promise<void> {
  await session?.detach();
  await approvals.clear();
  session = undefined;
  session = await AttachedSession.attach(await connection(), sessionId, hooks);
  chat.reveal();
}

/** The attached session, or a new one for the current project. */
async function currentSession(): Promise<AttachedSession> {
  if (session) return session;
  const cwd = projectDir();
  if (!cwd) throw new Error("Open a folder first: rein sessions belong to a project directory.");
  session = await AttachedSession.create(await connection(), cwd, hooks);
  return session;
}

/** The selection (or the whole file) of the active editor, as prompt context. */
function editorContext(): string {
  const editor = vscode.window.activeTextEditor;
  if (!editor) return "";
  const document = editor.document;
  const file = vscode.workspace.asRelativePath(document.uri);
  if (!editor.selection.isEmpty) {
    const { start, end } = editor.selection;
    const text = document.getText(editor.selection);
    return `\n\nContext from ${file} (lines ${start.line + 1}-${end.line + 1}):\n\`\`\`\n${text}\n\`\`\``;
  }
  return `\n\nContext from ${file}:\n\`\`\`\n${document.getText()}\n\`\`\``;
}

function command<A extends unknown[]>(run: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await run(...args);
    } catch (error) {
      void vscode.window.showErrorMessage(`rein: ${(error as Error).message}`);
    }
  };
}

/** Registers the commands and the chat view. */
export function activate(context: vscode.ExtensionContext): void {
  chat = new ChatViewProvider(context.extensionUri, {
    respond: (requestId, decision) => void respond(requestId, decision),
    showDiff: (requestId) => void approvals.showDiff(requestId),
  });
  approvals = new Approvals();
  statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 101);
  statusItem.command = "rein.chat.focus";
  context.subscriptions.push(
    approvals,
    statusItem,
    vscode.window.registerWebviewViewProvider(ChatViewProvider.viewId, chat, {
      webviewOptions: { retainContextWhenHidden: true },
    }),
    vscode.commands.registerCommand(
      "rein.allowProposed",
      command((uri?: vscode.Uri) => approvals.answer("allow_once", uri)),
    ),
    vscode.commands.registerCommand(
      "rein.denyProposed",
      command((uri?: vscode.Uri) => approvals.answer("deny", uri)),
    ),
    vscode.commands.registerCommand(
      "rein.prompt",
      command(async () => {
        const text = await vscode.window.showInputBox({ prompt: "Ask rein" });
        if (!text) return;
        const target = await currentSession();
        await target.prompt(text + editorContext());
        await vscode.commands.executeCommand(`${ChatViewProvider.viewId}.focus`);
      }),
    ),
    vscode.commands.registerCommand(
      "rein.attach",
      command(async () => {
        const id = await vscode.window.showInputBox({ prompt: "Session id to attach to" });
        if (id) await attach(id.trim());
      }),
    ),
    vscode.commands.registerCommand(
      "rein.pickSession",
      command(async () => {
        const sessions = await (await connection()).listSessions(projectDir());
        const picked = await vscode.window.showQuickPick(
          sessions.map((s) => ({
            label: s.name ?? s.first_prompt ?? s.session_id,
            description: `${s.running ? "running · " : ""}${s.updated}`,
            detail: s.cwd,
            id: s.session_id,
          })),
          { placeHolder: "Attach to a rein session" },
        );
        if (picked) await attach(picked.id);
      }),
    ),
    vscode.commands.registerCommand(
      "rein.steer",
      command(async () => {
        if (!session) throw new Error("no session is attached; prompt or attach first.");
        const target = session;
        const text = await vscode.window.showInputBox({ prompt: "Steer the running run" });
        if (text) await target.steer(text);
      }),
    ),
    vscode.commands.registerCommand(
      "rein.cancel",
      command(async () => {
        if (session && !(await session.cancel())) {
          void vscode.window.showInformationMessage("rein: nothing is running.");
        }
      }),
    ),
  );
}

/** Closes the daemon connection. */
export function deactivate(): void {
  client?.close();
}
