// The chat view: a webview in the rein side bar that shows the attached session's transcript
// as it streams. Markdown is rendered in the webview by markdown-it with raw HTML disabled
// (so model text cannot inject markup), thinking sits in a collapsed <details>, tool cells
// show their status, live output and exit code, and open approvals carry Allow / Deny
// buttons that disappear once anyone answers.

import * as vscode from "vscode";
import { ApprovalDecision } from "./protocol";
import { ChatItem } from "./transcript";

/** What the view asks the extension to do. */
export interface ChatViewActions {
  /** Answer an approval from its buttons. */
  respond(requestId: string, decision: ApprovalDecision): void;
  /** Open the diff of an edit or write approval again. */
  showDiff(requestId: string): void;
}

/** Renders transcript items into the `rein.chat` webview. */
export class ChatViewProvider implements vscode.WebviewViewProvider {
  /** The view id declared in package.json. */
  static readonly viewId = "rein.chat";
  private view?: vscode.WebviewView;
  private items: ChatItem[] = [];
  private status = "not attached";

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly actions: ChatViewActions,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.extensionUri, "media");
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    const renderer = view.webview.asWebviewUri(vscode.Uri.joinPath(media, "markdown-it.min.js"));
    view.webview.html = page(view.webview.cspSource, renderer.toString());
    view.webview.onDidReceiveMessage((message: { type: string; requestId: string; decision?: string }) => {
      if (message.type === "ready") {
        this.post();
      } else if (message.type === "respond" && isDecision(message.decision)) {
        this.actions.respond(message.requestId, message.decision);
      } else if (message.type === "diff") {
        this.actions.showDiff(message.requestId);
      }
    });
    view.onDidChangeVisibility(() => this.post());
    this.post();
  }

  /** Shows `items` and a status line (session, state, model, tokens, cost). */
  show(items: ChatItem[], status: string): void {
    this.items = items;
    this.status = status;
    this.post();
  }

  /** Brings the view forward (an approval is waiting): without taking the focus when it is
   * open, by opening it when it never was. */
  reveal(): void {
    if (this.view) this.view.show(true);
    else void vscode.commands.executeCommand(`${ChatViewProvider.viewId}.focus`);
  }

  private post(): void {
    void this.view?.webview.postMessage({ items: this.items, status: this.status });
  }
}

function isDecision(value: unknown): value is ApprovalDecision {
  return value === "allow_once" || value === "allow_session" || value === "deny";
}

function page(cspSource: string, renderer: string): string {
  const nonce = Math.random().toString(36).slice(2);
  return `<!DOCTYPE html>
<html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${cspSource} https: data:; style-src ${cspSource} 'unsafe-inline'; script-src 'nonce-${nonce}' ${cspSource};">
<style>
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); }
.user { font-weight: bold; margin-top: 1em; white-space: pre-wrap; }
.assistant { margin: .5em 0; }
.assistant p { margin: .3em 0; }
.assistant pre, .tool pre { background: var(--vscode-textCodeBlock-background); padding: .4em; overflow: auto; }
.assistant code { font-family: var(--vscode-editor-font-family); }
details.thinking { opacity: .7; font-style: italic; white-space: pre-wrap; }
details.thinking summary { cursor: pointer; }
.tool { font-family: var(--vscode-editor-font-family); border-left: 2px solid var(--vscode-textLink-foreground); padding-left: .5em; margin: .3em 0; }
.tool pre { max-height: 12em; margin: .2em 0; }
.tool.failed, .tool.denied { border-left-color: var(--vscode-errorForeground); }
.tool.waiting { border-left-color: var(--vscode-editorWarning-foreground); }
.approval { border: 1px solid var(--vscode-editorWarning-foreground); padding: .3em .5em; margin: .3em 0; }
.approval.answered { border-color: transparent; opacity: .7; padding: 0 .5em; }
.approval button { margin: .3em .3em 0 0; }
.notice, #status { opacity: .7; }
.plain { white-space: pre-wrap; }
</style></head>
<body><div id="status"></div><div id="chat"></div>
<script nonce="${nonce}" src="${renderer}"></script>
<script nonce="${nonce}">
const vscode = acquireVsCodeApi();
// The Markdown renderer, once its script has loaded. A host can fail to serve it (a fresh
// code-server did once, before its service worker was ready): the view then shows the text as
// it is, loads the script again a few times, and renders the Markdown when it comes. Without
// this, the first line below threw and the view stayed blank.
let md = null;
function makeRenderer() {
  // html: false escapes any raw HTML in the model's text; markdown-it also refuses
  // javascript:, vbscript: and data: links (except images) by default.
  if (!md && window.markdownit) md = window.markdownit({ html: false, linkify: false, breaks: false });
  return md !== null;
}
let last = null;
let loads = 0;
function loadRenderer() {
  if (makeRenderer() || loads >= 5) return;
  loads += 1;
  const script = document.createElement("script");
  script.nonce = "${nonce}";
  script.src = "${renderer}";
  script.addEventListener("load", () => { if (makeRenderer() && last) show(last); });
  script.addEventListener("error", () => setTimeout(loadRenderer, 500 * loads));
  document.body.append(script);
}
if (!makeRenderer()) setTimeout(loadRenderer, 200);
const chat = document.getElementById("chat");
const status = document.getElementById("status");
function el(tag, cls, text) { const d = document.createElement(tag); d.className = cls; if (text !== undefined) d.textContent = text; return d; }
function button(label, onClick) { const b = document.createElement("button"); b.textContent = label; b.addEventListener("click", onClick); return b; }
const openThinking = new Set();
function render(item, index) {
  switch (item.type) {
    case "user": return el("div", "user", "> " + item.text);
    case "assistant": {
      const d = el("div", "assistant");
      if (item.thinking) {
        const details = el("details", "thinking");
        details.open = openThinking.has(index);
        details.addEventListener("toggle", () => details.open ? openThinking.add(index) : openThinking.delete(index));
        details.append(el("summary", "", "Thinking"), el("div", "", item.thinking));
        d.append(details);
      }
      const body = el("div", "markdown");
      if (md) body.innerHTML = md.render(item.text);
      else body.append(el("div", "plain", item.text));
      d.append(body);
      return d;
    }
    case "tool": {
      const d = el("div", "tool " + item.status);
      const exit = item.exitCode === undefined || item.exitCode === null ? "" : " · exit " + item.exitCode;
      d.append(el("div", "title", "[" + item.status + "] " + item.title + exit));
      if (item.output) d.append(el("pre", "output", item.output));
      return d;
    }
    case "approval": {
      const d = el("div", "approval" + (item.decision ? " answered" : " open"));
      d.dataset.request = item.requestId;
      d.append(el("div", "", "approval: " + item.title + (item.decision ? " (" + item.decision + ")" : " — " + item.reason)));
      if (!item.decision) {
        const respond = (decision) => () => vscode.postMessage({ type: "respond", requestId: item.requestId, decision });
        d.append(button("Allow once", respond("allow_once")), button("Allow for session", respond("allow_session")), button("Deny", respond("deny")));
        if (item.toolName === "edit" || item.toolName === "write") {
          d.append(button("Show diff", () => vscode.postMessage({ type: "diff", requestId: item.requestId })));
        }
      }
      return d;
    }
    default: return el("div", "notice", item.text);
  }
}
function show(state) {
  last = state;
  status.textContent = state.status;
  chat.replaceChildren(...state.items.map(render));
  window.scrollTo(0, document.body.scrollHeight);
}
window.addEventListener("message", (event) => show(event.data));
// What the extension posted before this listened is asked for again.
vscode.postMessage({ type: "ready" });
</script></body></html>`;
}
