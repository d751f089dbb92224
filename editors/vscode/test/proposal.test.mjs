// Unit tests of the proposed-change computation behind the edit/write diff view.

import assert from "node:assert/strict";
import { test } from "node:test";
import { proposedChange } from "../out/proposal.js";

test("an edit applies each replacement to the current text", () => {
  const change = proposedChange(
    "edit",
    { path: "a.txt", edits: [{ oldText: "one", newText: "1" }, { oldText: "three", newText: "3" }] },
    "one\ntwo\nthree\n",
  );
  assert.deepEqual(change, { path: "a.txt", before: "one\ntwo\nthree\n", after: "1\ntwo\n3\n" });
});

test("an edit whose oldText is missing changes nothing for that edit", () => {
  const change = proposedChange("edit", { path: "a.txt", edits: [{ oldText: "zzz", newText: "y" }] }, "abc");
  assert.equal(change.after, "abc");
});

test("a write to a new file diffs against empty text", () => {
  assert.deepEqual(proposedChange("write", { path: "new.md", content: "# hi\n" }, undefined), {
    path: "new.md",
    before: "",
    after: "# hi\n",
  });
});

test("other tools and malformed arguments propose nothing", () => {
  assert.equal(proposedChange("bash", { command: "ls" }, ""), undefined);
  assert.equal(proposedChange("edit", { edits: [] }, ""), undefined);
  assert.equal(proposedChange("write", { path: "x" }, ""), undefined);
});
