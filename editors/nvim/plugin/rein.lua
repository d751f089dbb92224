-- User commands of the rein plugin; the module loads on first use.

if vim.g.loaded_rein then
  return
end
vim.g.loaded_rein = true

local function rein()
  return require("rein")
end

local function with_text(text, prompt, run)
  if text ~= "" then
    return run(text)
  end
  vim.ui.input({ prompt = prompt }, function(input)
    if input and input ~= "" then
      run(input)
    end
  end)
end

vim.api.nvim_create_user_command("ReinPrompt", function(opts)
  local range = opts.range > 0 and { opts.line1, opts.line2 } or nil
  with_text(opts.args, "rein> ", function(text)
    rein().prompt(text, { range = range })
  end)
end, { nargs = "*", range = true, desc = "Prompt rein with the selection (or buffer) as context" })

vim.api.nvim_create_user_command("ReinAttach", function(opts)
  rein().attach(opts.args)
end, { nargs = 1, desc = "Attach to a rein session by id" })

vim.api.nvim_create_user_command("ReinSessions", function()
  rein().pick()
end, { desc = "Pick a rein session of this directory" })

vim.api.nvim_create_user_command("ReinSteer", function(opts)
  with_text(opts.args, "steer> ", function(text)
    rein().steer(text)
  end)
end, { nargs = "*", desc = "Steer rein's running run" })

vim.api.nvim_create_user_command("ReinCancel", function()
  rein().cancel()
end, { desc = "Cancel rein's run" })

vim.api.nvim_create_user_command("ReinChat", function()
  require("rein.chat").open()
end, { desc = "Show the rein chat" })

local decisions = { "allow_once", "allow_session", "deny" }

vim.api.nvim_create_user_command("ReinApprove", function(opts)
  local decision = opts.args ~= "" and opts.args or "allow_once"
  if not vim.tbl_contains(decisions, decision) then
    return vim.notify("rein: answer with one of " .. table.concat(decisions, ", "), vim.log.levels.ERROR)
  end
  rein().approve(decision)
end, {
  nargs = "?",
  complete = function()
    return decisions
  end,
  desc = "Answer the oldest waiting rein approval (allow_once, allow_session or deny)",
})

vim.api.nvim_create_user_command("ReinApproval", function()
  require("rein.approval").focus()
end, { desc = "Show and focus the waiting rein approval" })
