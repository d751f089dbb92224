-- The chat buffer: a scratch markdown buffer that shows the attached session's history and
-- streams its runs. The model's thinking goes on lines starting with THINKING, which are
-- folded (closed) in every window showing the chat.

local M = {}

local bufnr = nil

--- The prefix of thinking lines (folded).
M.THINKING = "│ "

-- What the last streamed line holds: "text", "thinking" or nil (a line of its own).
local streaming = nil

--- The fold level of chat line `lnum` (used as 'foldexpr').
function M.foldexpr(lnum)
  local line = vim.fn.getline(lnum)
  return line:sub(1, #M.THINKING) == M.THINKING and 1 or 0
end

--- The text of a closed thinking fold (used as 'foldtext').
function M.foldtext()
  local count = vim.v.foldend - vim.v.foldstart + 1
  return string.format("▸ thinking (%d line%s)", count, count == 1 and "" or "s")
end

-- Folds thinking in a window showing the chat (window-local options).
local function fold_thinking(win)
  vim.api.nvim_win_set_option(win, "foldmethod", "expr")
  vim.api.nvim_win_set_option(win, "foldexpr", "v:lua.require'rein.chat'.foldexpr(v:lnum)")
  vim.api.nvim_win_set_option(win, "foldtext", "v:lua.require'rein.chat'.foldtext()")
  vim.api.nvim_win_set_option(win, "foldlevel", 0)
  vim.api.nvim_win_set_option(win, "foldenable", true)
end

--- A one-line title for a tool call: the tool and its main argument.
function M.tool_title(name, args)
  if type(args) == "table" then
    for _, key in ipairs({ "path", "command", "pattern" }) do
      if type(args[key]) == "string" then
        return name .. " " .. args[key]
      end
    end
  end
  return name
end

--- The chat buffer, created on first use.
function M.buffer()
  if bufnr and vim.api.nvim_buf_is_valid(bufnr) then
    return bufnr
  end
  bufnr = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(bufnr, "rein://chat")
  vim.api.nvim_buf_set_option(bufnr, "filetype", "markdown")
  vim.api.nvim_buf_set_option(bufnr, "bufhidden", "hide")
  vim.cmd(string.format(
    "autocmd BufWinEnter <buffer=%d> lua require'rein.chat'.fold_current_window()",
    bufnr
  ))
  return bufnr
end

--- Folds thinking in the current window (it shows the chat).
function M.fold_current_window()
  fold_thinking(vim.api.nvim_get_current_win())
end

--- Shows the chat buffer in a split unless a window shows it already.
function M.open()
  local buf = M.buffer()
  if vim.fn.bufwinid(buf) == -1 then
    local current = vim.api.nvim_get_current_win()
    vim.cmd("botright vsplit")
    vim.api.nvim_win_set_buf(0, buf)
    fold_thinking(vim.api.nvim_get_current_win())
    vim.api.nvim_set_current_win(current)
  end
  return buf
end

--- The chat's text, for tests.
function M.text()
  return table.concat(vim.api.nvim_buf_get_lines(M.buffer(), 0, -1, false), "\n")
end

local function scroll(buf)
  local win = vim.fn.bufwinid(buf)
  if win ~= -1 then
    vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
  end
end

--- Appends whole lines.
function M.lines(lines)
  streaming = nil
  local buf = M.buffer()
  local count = vim.api.nvim_buf_line_count(buf)
  local first = vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1]
  if count == 1 and first == "" then
    vim.api.nvim_buf_set_lines(buf, 0, 1, false, lines)
  else
    vim.api.nvim_buf_set_lines(buf, count, count, false, lines)
  end
  scroll(buf)
end

--- Appends streamed text to the last line, starting new lines at newlines. `kind` is "text"
--- (the default) or "thinking" (every line prefixed, so it folds).
function M.stream(text, kind)
  kind = kind or "text"
  local buf = M.buffer()
  local prefix = kind == "thinking" and M.THINKING or ""
  if streaming ~= kind then
    -- A new kind of stream starts on a line of its own.
    local count = vim.api.nvim_buf_line_count(buf)
    local last_line = vim.api.nvim_buf_get_lines(buf, count - 1, count, false)[1] or ""
    if last_line == "" and count > 0 then
      vim.api.nvim_buf_set_lines(buf, count - 1, count, false, { prefix })
    else
      vim.api.nvim_buf_set_lines(buf, count, count, false, { prefix })
    end
    streaming = kind
  end
  local last = vim.api.nvim_buf_line_count(buf) - 1
  local current = vim.api.nvim_buf_get_lines(buf, last, last + 1, false)[1] or ""
  local pieces = vim.split(current .. text, "\n", { plain = true })
  for index = 2, #pieces do
    pieces[index] = prefix .. pieces[index]
  end
  vim.api.nvim_buf_set_lines(buf, last, last + 1, false, pieces)
  scroll(buf)
end

local function thinking_lines(text)
  local lines = {}
  for _, line in ipairs(vim.split(text, "\n", { plain = true })) do
    table.insert(lines, M.THINKING .. line)
  end
  return lines
end

--- Empties the chat.
function M.clear()
  streaming = nil
  vim.api.nvim_buf_set_lines(M.buffer(), 0, -1, false, {})
end

local function text_of(content)
  local parts = {}
  for _, block in ipairs(content or {}) do
    if block.type == "text" then
      table.insert(parts, block.text)
    end
  end
  return table.concat(parts, "")
end

local function split(text)
  return vim.split(text, "\n", { plain = true })
end

--- Renders stored messages (`session/messages`).
function M.history(messages)
  for _, message in ipairs(messages) do
    if message.role == "user" then
      M.lines({ "## You" })
      M.lines(split(text_of(message.content)))
    elseif message.role == "assistant" then
      M.lines({ "## rein" })
      for _, block in ipairs(message.content) do
        if block.type == "text" then
          M.lines(split(block.text))
        elseif block.type == "thinking" and type(block.thinking) == "string" and block.thinking ~= "" then
          M.lines(thinking_lines(block.thinking))
        elseif block.type == "tool_call" then
          M.lines({ "- tool: " .. M.tool_title(block.name, block.arguments) })
        end
      end
    elseif message.role == "tool_result" then
      local mark = message.is_error and "failed" or "done"
      M.lines({ "  " .. mark .. ": " .. message.tool_name })
    end
  end
end

--- Renders one live event.
function M.event(event)
  local kind = event.kind
  if kind == "message_start" then
    local role = event.message.role
    if role == "user" then
      M.lines({ "## You" })
      M.lines(split(text_of(event.message.content)))
    elseif role == "assistant" then
      M.lines({ "## rein", "" })
    end
  elseif kind == "message_update" then
    local delta = event.delta
    if delta.type == "text_delta" then
      M.stream(delta.delta, "text")
    elseif delta.type == "thinking_delta" then
      M.stream(delta.delta, "thinking")
    end
  elseif kind == "tool_execution_start" then
    M.lines({ "- tool: " .. M.tool_title(event.tool_name, event.arguments) })
  elseif kind == "tool_execution_end" then
    local result = event.result
    local mark = result.is_error and "failed" or "done"
    local first = split(text_of(result.content))[1] or ""
    M.lines({ "  " .. mark .. ": " .. first })
  elseif kind == "approval_requested" then
    M.lines({ "? approval: " .. M.tool_title(event.tool_name, event.arguments) .. " (" .. event.reason .. ")" })
  elseif kind == "approval_resolved" then
    M.lines({ "  " .. event.decision .. " by " .. event.resolved_by })
  elseif kind == "agent_end" then
    local err = (type(event.error) == "string") and (": " .. event.error) or ""
    M.lines({ "", "-- run " .. event.reason .. err .. " --", "" })
  end
end

return M
