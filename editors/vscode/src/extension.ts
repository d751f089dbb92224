// The rein VS Code extension: commands to prompt, attach, steer, cancel and pick a session,
// a chat view that streams the attached session, and approvals as notifications. Files the
// agent writes are reloaded by VS Code's own file watcher, so no hook is needed for that.

import * as vscode from "vscode";
import { ChatViewProvider } from "./chatView";
import { ReinClient, SessionEvent } from "./protocol";
import { AttachedSession, SessionHooks } from "./session";
import { toolTitle } from "./transcript";

let client: ReinClient | undefined;
let session: AttachedSession | undefined;
let chat: ChatViewProvider;

/** The daemon connection, through `rein stdio` (which starts the daemon when needed). */
async function connection(): Promise<ReinClient> {
  if (client) return client;
  const rein = vscode.workspace.getConfiguration("rein").get<string>("path") || "rein";
  const fresh = ReinClient.spawnStdio(rein);
  fresh.on("close", () => {
    if (client === fresh) {
      client = undefined;
      session = undefined;
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

const hooks: SessionHooks = {
  onChange(changed) {
    const state = changed.transcript.running ? "running" : "idle";
    chat.show([...changed.transcript.items], `${changed.sessionId.slice(0, 13)} · ${state}`);
  },
  onApproval(changed, request: SessionEvent) {
    void askApproval(changed, request);
  },
};

async function askApproval(target: AttachedSession, request: SessionEvent): Promise<void> {
  const title = toolTitle(request.tool_name as string, request.arguments);
  const choice = await vscode.window.showWarningMessage(
    `rein wants to run ${title}: ${request.reason as string}`,
    "Allow once",
    "Allow for session",
    "Deny",
  );
  const decision =
    choice === "Allow once" ? "allow_once" : choice === "Allow for session" ? "allow_session" : "deny";
  const taken = await target.respond(request.request_id as string, decision);
  if (!taken) void vscode.window.showInformationMessage("Another client answered that approval.");
}

async function attach(sessionId: string): Promise<void> {
  await session?.detach();
  session = await AttachedSession.attach(await connection(), sessionId, hooks);
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

function command(run: () => Promise<void>): () => Promise<void> {
  return async () => {
    try {
      await run();
    } catch (error) {
      void vscode.window.showErrorMessage(`rein: ${(error as Error).message}`);
    }
  };
}

/** Registers the commands and the chat view. */
export function activate(context: vscode.ExtensionContext): void {
  chat = new ChatViewProvider();
  context.subscriptions.push(
    vscode.window.registerWebviewViewProvider(ChatViewProvider.viewId, chat),
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
