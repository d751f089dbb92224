-- Headless end-to-end test of the Neovim plugin against a live daemon and the fake provider.
-- Run through editors/testkit/with-daemon.mjs (see editors/test.sh), which sets REIN_BIN,
-- REIN_SOCKET and REIN_TEST_PROJECT:
--
--   nvim --headless -u NONE -i NONE --cmd "set rtp+=editors/nvim" -c "luafile editors/nvim/test/e2e.lua"
--
-- Exits 0 when every check passes, 1 otherwise.

local failures = 0
local passed = 0

local function check(name, fn)
  local ok, err = pcall(fn)
  if ok then
    passed = passed + 1
    io.stdout:write("ok - " .. name .. "\n")
  else
    failures = failures + 1
    io.stdout:write("not ok - " .. name .. ": " .. tostring(err) .. "\n")
  end
end

local function wait_for(what, predicate)
  if not vim.wait(20000, predicate, 20) then
    error("timed out waiting for " .. what)
  end
end

local function eq(want, got, what)
  if want ~= got then
    error(string.format("%s: want %s, got %s", what, vim.inspect(want), vim.inspect(got)))
  end
end

-- Everything runs inside one protected call, so a failure outside a check still ends Neovim
-- with a non-zero status instead of leaving it waiting.
local function main()
  local project = assert(os.getenv("REIN_TEST_PROJECT"), "REIN_TEST_PROJECT is not set")
  vim.cmd("cd " .. vim.fn.fnameescape(project))
  vim.cmd("runtime plugin/rein.lua")
  local rein = require("rein")
  local chat = require("rein.chat")
  rein.setup({ cmd = { os.getenv("REIN_BIN") or "rein", "stdio" } })

  -- Approvals are answered by a stand-in for the user: the first is allowed, later ones are
  -- kept open so the test can cancel the run they hold.
  local asked = {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(asked, { items = items, prompt = opts.prompt, answer = on_choice })
    if #asked == 1 then
      on_choice(items[1], 1)
    end
  end

  check("a prompt with the selection as context streams into the chat and the edited buffer reloads", function()
    vim.cmd("silent edit notes.txt")
    eq("first line", vim.api.nvim_buf_get_lines(0, 0, 1, false)[1], "buffer before")
    vim.cmd("1,1ReinPrompt Rewrite the first line.")
    wait_for("the run to end", function()
      return chat.text():find("-- run completed --", 1, true) ~= nil
    end)
    local text = chat.text()
    assert(text:find("## You\nRewrite the first line.\n\nContext from notes.txt (lines 1-1):", 1, true), text)
    assert(text:find("Edited notes.txt.", 1, true), text)
    assert(text:find("- tool: edit notes.txt", 1, true), text)
    assert(text:find("allow_once by rein.nvim", 1, true), text)
    eq(1, #asked, "approvals asked")
    assert(asked[1].prompt:find("edit notes.txt", 1, true), asked[1].prompt)
    wait_for("the buffer to reload", function()
      return vim.api.nvim_buf_get_lines(0, 0, 1, false)[1] == "edited line"
    end)
    wait_for("the session to settle", function()
      return not rein.status().running
    end)
  end)

  check("cancel ends a run that waits for an approval", function()
    rein.prompt("Sleep a while.")
    wait_for("the second approval", function()
      return #asked == 2
    end)
    vim.cmd("ReinCancel")
    wait_for("the cancelled run", function()
      return chat.text():find("-- run cancelled --", 1, true) ~= nil
    end)
  end)

  check("a steer reaches the session and its answer streams in", function()
    wait_for("the session to settle", function()
      return not rein.status().running
    end)
    rein.prompt("Say hi.")
    vim.cmd("ReinSteer Also say bye.")
    wait_for("the steered answer", function()
      return chat.text():find("Bye.", 1, true) ~= nil
    end)
    local text = chat.text()
    assert(text:find("## You\nAlso say bye.", 1, true), text)
    assert(text:find("Hi.", 1, true), text)
  end)

  check("picking a session attaches and shows its history", function()
    local session_id = rein.status().session_id
    rein.stop()
    chat.clear()
    vim.ui.select = function(items, _, on_choice)
      on_choice(items[1], 1)
    end
    vim.cmd("ReinSessions")
    wait_for("the history", function()
      return chat.text():find("Edited notes.txt.", 1, true) ~= nil
    end)
    eq(session_id, rein.status().session_id, "attached session")
    assert(chat.text():find("## You\nSleep a while.", 1, true), chat.text())
  end)
  rein.stop()
end

local ok, err = pcall(main)
if not ok then
  failures = failures + 1
  io.stdout:write("not ok - setup: " .. tostring(err) .. "\n")
end
io.stdout:write(string.format("%d passed, %d failed\n", passed, failures))
vim.cmd(failures == 0 and "qall!" or "cquit 1")
