// The chat view: a webview in the rein side bar that shows the attached session's transcript
// as it streams.

import * as vscode from "vscode";
import { ChatItem } from "./transcript";

/** Renders transcript items into the `rein.chat` webview. */
export class ChatViewProvider implements vscode.WebviewViewProvider {
  /** The view id declared in package.json. */
  static readonly viewId = "rein.chat";
  private view?: vscode.WebviewView;
  private items: ChatItem[] = [];
  private status = "not attached";

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    view.webview.options = { enableScripts: true };
    view.webview.html = page(view.webview.cspSource);
    view.onDidChangeVisibility(() => this.post());
    this.post();
  }

  /** Shows `items` and a status line (session, running or idle). */
  show(items: ChatItem[], status: string): void {
    this.items = items;
    this.status = status;
    this.post();
  }

  private post(): void {
    void this.view?.webview.postMessage({ items: this.items, status: this.status });
  }
}

function page(cspSource: string): string {
  const nonce = Math.random().toString(36).slice(2);
  return `<!DOCTYPE html>
<html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${cspSource} 'unsafe-inline'; script-src 'nonce-${nonce}';">
<style>
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); }
.user { font-weight: bold; margin-top: 1em; white-space: pre-wrap; }
.assistant { white-space: pre-wrap; margin: .5em 0; }
.thinking { opacity: .6; font-style: italic; white-space: pre-wrap; }
.tool { font-family: var(--vscode-editor-font-family); border-left: 2px solid var(--vscode-textLink-foreground); padding-left: .5em; margin: .3em 0; }
.tool pre { max-height: 12em; overflow: auto; margin: .2em 0; }
.approval { color: var(--vscode-editorWarning-foreground); }
.notice, #status { opacity: .7; }
</style></head>
<body><div id="status"></div><div id="chat"></div>
<script nonce="${nonce}">
const chat = document.getElementById("chat");
const status = document.getElementById("status");
function el(cls, text) { const d = document.createElement("div"); d.className = cls; d.textContent = text; return d; }
window.addEventListener("message", (event) => {
  const { items, status: line } = event.data;
  status.textContent = line;
  chat.replaceChildren(...items.map((item) => {
    switch (item.type) {
      case "user": return el("user", "> " + item.text);
      case "assistant": {
        const d = el("assistant", item.text);
        if (item.thinking) d.prepend(el("thinking", item.thinking));
        return d;
      }
      case "tool": {
        const d = el("tool", "[" + item.status + "] " + item.title);
        if (item.output) { const pre = document.createElement("pre"); pre.textContent = item.output; d.append(pre); }
        return d;
      }
      case "approval": return el("approval", "approval: " + item.title + " (" + (item.decision || "waiting") + ")");
      default: return el("notice", item.text);
    }
  }));
  window.scrollTo(0, document.body.scrollHeight);
});
</script></body></html>`;
}
