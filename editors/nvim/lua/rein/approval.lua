-- Approvals in a floating window that never blocks the editor: the oldest open approval is
-- shown in a float (keys a / s / d answer it; `:ReinApprove` does the same from anywhere), an
-- edit or write approval also opens a diff of the proposed change in a new tab page, and both
-- close as soon as the approval is answered, here or by any other client.

local chat = require("rein.chat")

local M = {}

-- Open approvals, oldest first: { session_id, event, diff_tab }.
local open = {}
-- The float showing open[1]: { win, buf, request_id }.
local float = nil
-- How an answer is sent: respond(session_id, request_id, decision).
local respond = nil

local keys = {
  { key = "a", label = "allow once", decision = "allow_once" },
  { key = "s", label = "allow for the session", decision = "allow_session" },
  { key = "d", label = "deny", decision = "deny" },
}

--- Sets the function that sends an answer to the daemon.
function M.on_respond(fn)
  respond = fn
end

--- The open approvals (oldest first), for commands and tests.
function M.pending()
  return open
end

--- The float's window id, when one is shown.
function M.window()
  if float and vim.api.nvim_win_is_valid(float.win) then
    return float.win
  end
  return nil
end

local function close_float()
  if float then
    if vim.api.nvim_win_is_valid(float.win) then
      vim.api.nvim_win_close(float.win, true)
    end
    if vim.api.nvim_buf_is_valid(float.buf) then
      vim.api.nvim_buf_delete(float.buf, { force = true })
    end
    float = nil
  end
end

local function close_diff(entry)
  local tab = entry.diff_tab
  entry.diff_tab = nil
  if tab and vim.api.nvim_tabpage_is_valid(tab) and #vim.api.nvim_list_tabpages() > 1 then
    local number = vim.api.nvim_tabpage_get_number(tab)
    vim.cmd("tabclose! " .. number)
  end
end

--- Answers the oldest open approval (or `request_id`) with `decision`.
function M.answer(decision, request_id)
  local entry = open[1]
  if request_id then
    for _, candidate in ipairs(open) do
      if candidate.event.request_id == request_id then
        entry = candidate
      end
    end
  end
  if not entry then
    return vim.notify("rein: no approval is waiting", vim.log.levels.INFO)
  end
  if respond then
    respond(entry.session_id, entry.event.request_id, decision)
  end
end

local function show()
  close_float()
  local entry = open[1]
  if not entry then
    return
  end
  local event = entry.event
  local lines = {
    "rein wants to run " .. chat.tool_title(event.tool_name, event.arguments),
    tostring(event.reason or ""),
    "",
  }
  for _, k in ipairs(keys) do
    table.insert(lines, string.format("  %s  %s", k.key, k.label))
  end
  if entry.diff_tab then
    table.insert(lines, "  (the proposed change is open in a diff tab)")
  end
  if #open > 1 then
    table.insert(lines, string.format("  %d more waiting", #open - 1))
  end
  local width = 20
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line) + 2)
  end
  width = math.min(width, math.max(20, vim.o.columns - 4))
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.api.nvim_buf_set_option(buf, "modifiable", false)
  vim.api.nvim_buf_set_option(buf, "bufhidden", "wipe")
  for _, k in ipairs(keys) do
    vim.api.nvim_buf_set_keymap(buf, "n", k.key, "", {
      nowait = true,
      noremap = true,
      callback = function()
        M.answer(k.decision, event.request_id)
      end,
    })
  end
  -- The float does not take the focus: the editor stays usable while the approval waits.
  local win = vim.api.nvim_open_win(buf, false, {
    relative = "editor",
    anchor = "NE",
    row = 1,
    col = vim.o.columns - 1,
    width = width,
    height = #lines,
    style = "minimal",
    border = "rounded",
    focusable = true,
  })
  float = { win = win, buf = buf, request_id = event.request_id }
end

-- A scratch buffer holding `text`, named for the diff.
local function scratch(name, text)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text, "\n", { plain = true }))
  vim.api.nvim_buf_set_option(buf, "bufhidden", "wipe")
  vim.api.nvim_buf_set_option(buf, "modifiable", false)
  pcall(vim.api.nvim_buf_set_name, buf, name)
  return buf
end

local function read_file(path)
  local handle = io.open(path, "rb")
  if not handle then
    return nil
  end
  local text = handle:read("*a")
  handle:close()
  return text
end

--- The text an `edit` or `write` call would leave in the file (`current` is nil for a new file).
function M.proposed(tool_name, args, current)
  if type(args) ~= "table" or type(args.path) ~= "string" then
    return nil
  end
  local before = current or ""
  if tool_name == "write" and type(args.content) == "string" then
    return args.content
  end
  if tool_name == "edit" and type(args.edits) == "table" then
    local after = before
    for _, edit in ipairs(args.edits) do
      if type(edit) == "table" and type(edit.oldText) == "string" and edit.oldText ~= "" and type(edit.newText) == "string" then
        local at = after:find(edit.oldText, 1, true)
        if at then
          after = after:sub(1, at - 1) .. edit.newText .. after:sub(at + #edit.oldText)
        end
      end
    end
    return after
  end
  return nil
end

-- Opens a tab page with the file as it is and as the call would leave it, in diff mode.
local function open_diff(entry, cwd)
  local event = entry.event
  local args = event.arguments
  if (event.tool_name ~= "edit" and event.tool_name ~= "write") or type(args) ~= "table" or type(args.path) ~= "string" then
    return
  end
  local path = args.path
  if path:sub(1, 1) ~= "/" then
    path = (cwd or vim.fn.getcwd()) .. "/" .. path
  end
  local current = read_file(path)
  local after = M.proposed(event.tool_name, args, current)
  if not after then
    return
  end
  local strip = function(text)
    return (text:gsub("\n$", ""))
  end
  vim.cmd("tabnew")
  local tab = vim.api.nvim_get_current_tabpage()
  local id = event.request_id
  vim.api.nvim_win_set_buf(0, scratch("rein://proposed/" .. id .. "/" .. args.path, strip(after)))
  vim.cmd("diffthis")
  vim.cmd("leftabove vnew")
  local empty = vim.api.nvim_get_current_buf()
  vim.api.nvim_win_set_buf(0, scratch("rein://current/" .. id .. "/" .. args.path, strip(current or "")))
  if vim.api.nvim_buf_is_valid(empty) then
    vim.api.nvim_buf_delete(empty, { force = true })
  end
  vim.cmd("diffthis")
  entry.diff_tab = tab
end

--- Records a new approval (an `approval_requested` event) and shows it.
function M.add(session_id, event, cwd)
  local entry = { session_id = session_id, event = event, cwd = cwd }
  table.insert(open, entry)
  if #open == 1 then
    open_diff(entry, cwd)
  end
  show()
end

--- Forgets an answered (or expired) approval, closing its float and diff.
function M.resolved(request_id)
  for index, entry in ipairs(open) do
    if entry.event.request_id == request_id then
      table.remove(open, index)
      close_diff(entry)
      if index == 1 and open[1] then
        open_diff(open[1], open[1].cwd)
      end
      break
    end
  end
  show()
end

--- Forgets every approval (detached or disconnected).
function M.clear()
  for _, entry in ipairs(open) do
    close_diff(entry)
  end
  open = {}
  close_float()
end

--- Shows the float again (after it was closed by hand) and focuses it.
function M.focus()
  show()
  if float then
    vim.api.nvim_set_current_win(float.win)
  end
end

return M
