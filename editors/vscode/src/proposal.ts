// The change a `write` or `edit` tool call proposes, as the file's text before and after, so
// an editor can show it in a diff view while the approval waits. No `vscode` import.

/** A file's text now and after the proposed call. */
export interface ProposedChange {
  /** The path as the tool was given it (relative to the session's directory or absolute). */
  path: string;
  before: string;
  after: string;
}

interface Edit {
  oldText?: unknown;
  newText?: unknown;
}

/**
 * The change proposed by a `write` or `edit` call with `args`, given the file's current text
 * (undefined when it does not exist); undefined for other tools or malformed arguments.
 * Edits apply like the tool applies them: each `oldText` replaced by its `newText`. An edit
 * whose `oldText` is not found is left out (the tool will reject the call; the diff then
 * shows what did match).
 */
export function proposedChange(
  toolName: string,
  args: unknown,
  current: string | undefined,
): ProposedChange | undefined {
  const fields = (args ?? {}) as Record<string, unknown>;
  if (typeof fields.path !== "string") return undefined;
  const before = current ?? "";
  if (toolName === "write" && typeof fields.content === "string") {
    return { path: fields.path, before, after: fields.content };
  }
  if (toolName === "edit" && Array.isArray(fields.edits)) {
    let after = before;
    for (const edit of fields.edits as Edit[]) {
      if (typeof edit?.oldText !== "string" || typeof edit.newText !== "string") continue;
      const at = after.indexOf(edit.oldText);
      if (edit.oldText === "" || at < 0) continue;
      after = after.slice(0, at) + edit.newText + after.slice(at + edit.oldText.length);
    }
    return { path: fields.path, before, after };
  }
  return undefined;
}
