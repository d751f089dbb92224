// Unit tests of the transcript fold (no daemon needed).

import assert from "node:assert/strict";
import { test } from "node:test";
import { Transcript, toolTitle } from "../out/transcript.js";

const delta = (d) => ({ kind: "message_update", delta: d });

test("a run with text, a tool call and an approval folds into chat items", () => {
  const transcript = new Transcript();
  const events = [
    { kind: "agent_start", run_id: "r1" },
    { kind: "message_start", message: { role: "user", content: [{ type: "text", text: "fix" }] } },
    { kind: "message_start", message: { role: "assistant", content: [] } },
    delta({ type: "thinking_delta", index: 0, delta: "look" }),
    delta({ type: "text_delta", index: 1, delta: "Running " }),
    delta({ type: "text_delta", index: 1, delta: "tests." }),
    delta({ type: "tool_call_end", index: 2, call: { id: "c1", name: "bash", arguments: { command: "make" } } }),
    { kind: "approval_requested", request_id: "ap-1", tool_call_id: "c1", tool_name: "bash", arguments: { command: "make" }, reason: "asks" },
    { kind: "approval_resolved", request_id: "ap-1", decision: "allow_once", resolved_by: "rein.vscode" },
    { kind: "tool_execution_start", tool_call_id: "c1", tool_name: "bash", arguments: { command: "make" } },
    { kind: "tool_execution_update", tool_call_id: "c1", tool_name: "bash", content: [{ type: "text", text: "ok\n" }] },
    { kind: "tool_execution_end", tool_call_id: "c1", tool_name: "bash", result: { tool_call_id: "c1", tool_name: "bash", content: [{ type: "text", text: "ok\nexit 0" }], details: { exitCode: 0 }, is_error: false } },
    { kind: "agent_end", run_id: "r1", reason: "completed", usage: {}, turns: 1 },
    { kind: "settled" },
  ];
  events.forEach((event, index) => transcript.apply(event, index + 1));
  assert.equal(transcript.running, false);
  assert.equal(
    transcript.toText(),
    ["> fix", "Running tests.", "? bash make: allow_once (rein.vscode)", "[done] bash make (exit 0)\nok\nexit 0", "-- run completed"].join("\n"),
  );
  assert.equal(transcript.items[1].thinking, "look");
});

test("events at or below the last seq are ignored, so a replay never doubles text", () => {
  const transcript = new Transcript();
  transcript.load([{ role: "user", content: [{ type: "text", text: "hi" }] }], 5);
  assert.equal(transcript.apply(delta({ type: "text_delta", index: 0, delta: "old" }), 5), false);
  assert.equal(transcript.apply(delta({ type: "text_delta", index: 0, delta: "new" }), 6), true);
  assert.equal(transcript.toText(), "> hi\nnew");
});

test("history loads tool calls with their results", () => {
  const transcript = new Transcript();
  transcript.load(
    [
      { role: "user", content: [{ type: "text", text: "read it" }] },
      { role: "assistant", content: [{ type: "tool_call", id: "c1", name: "read", arguments: { path: "a.txt" } }] },
      { role: "tool_result", tool_call_id: "c1", tool_name: "read", content: [{ type: "text", text: "nope" }], is_error: true },
    ],
    9,
  );
  assert.equal(transcript.toText(), "> read it\n\n[failed] read a.txt\nnope");
  assert.equal(toolTitle("grep", { pattern: "TODO" }), "grep TODO");
});

test("a tool waits while its approval is open and the approval stays before its output", () => {
  const transcript = new Transcript();
  const call = { id: "c1", name: "bash", arguments: { command: "ls" } };
  transcript.apply({ kind: "message_start", message: { role: "assistant", content: [] } }, 1);
  transcript.apply(delta({ type: "tool_call_end", index: 0, call }), 2);
  transcript.apply({ kind: "approval_requested", request_id: "ap-1", tool_call_id: "c1", tool_name: "bash", arguments: call.arguments, reason: "asks" }, 3);
  assert.equal(transcript.toText(), "\n? bash ls: waiting\n[waiting] bash ls");
  transcript.apply({ kind: "approval_resolved", request_id: "ap-1", decision: "allow_once", resolved_by: "other" }, 4);
  assert.equal(transcript.toText(), "\n? bash ls: allow_once (other)\n[approved] bash ls");
  transcript.apply({ kind: "tool_execution_start", tool_call_id: "c1", tool_name: "bash", arguments: call.arguments }, 5);
  transcript.apply({ kind: "tool_execution_update", tool_call_id: "c1", tool_name: "bash", content: [{ type: "text", text: "a.txt\n" }] }, 6);
  assert.equal(transcript.toText(), "\n? bash ls: allow_once (other)\n[running] bash ls\na.txt\n");
  transcript.apply({ kind: "tool_execution_end", tool_call_id: "c1", tool_name: "bash", result: { content: [{ type: "text", text: "a.txt" }], details: { exitCode: 2 }, is_error: true } }, 7);
  assert.equal(transcript.toText(), "\n? bash ls: allow_once (other)\n[failed] bash ls (exit 2)\na.txt");
});

test("a denied approval marks its tool denied", () => {
  const transcript = new Transcript();
  transcript.apply(delta({ type: "tool_call_end", index: 0, call: { id: "c2", name: "write", arguments: { path: "x" } } }), 1);
  transcript.apply({ kind: "approval_requested", request_id: "ap-2", tool_call_id: "c2", tool_name: "write", arguments: { path: "x" }, reason: "asks" }, 2);
  transcript.apply({ kind: "approval_resolved", request_id: "ap-2", decision: "deny", resolved_by: "rein.nvim" }, 3);
  assert.equal(transcript.items.find((item) => item.type === "tool").status, "denied");
});
