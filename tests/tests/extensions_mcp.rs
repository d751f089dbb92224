//! End-to-end: the daemon's MCP client against the reference MCP servers published on npm
//! (`@modelcontextprotocol/server-everything` and `server-filesystem`, installed by
//! `scripts/mcp-test-servers.sh`), over stdio and streamable HTTP. Each test skips with a
//! message when Node.js or the packages are missing.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

mod cli_support;

use cli_support::{CliEnv, assert_exit, request_mentions, session_id, stderr, stdout};
use rein_testkit::fake_provider::Reply;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long a server may take to reach a state the test waits for.
const STATE_WAIT: Duration = Duration::from_secs(60);

fn servers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("mcp-servers")
}

/// The entry script of an installed reference server, or why the test cannot run.
fn server_script(package: &str) -> Option<PathBuf> {
    let node = std::process::Command::new("node").arg("--version").output();
    if !node.is_ok_and(|output| output.status.success()) {
        eprintln!("skipped: node is not installed (run scripts/mcp-test-servers.sh)");
        return None;
    }
    let script = servers_dir()
        .join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    if !script.is_file() {
        eprintln!("skipped: {package} is not installed (run scripts/mcp-test-servers.sh)");
        return None;
    }
    Some(script)
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
}

fn events<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().map(|line| &line["event"]).filter(|event| event["kind"] == kind).collect()
}

/// Puts `[mcp_servers.*]` tables in the daemon's configuration.
fn configure(env: &CliEnv, tables: &str) {
    let path = env.daemon.home().join("config.toml");
    let mut config = std::fs::read_to_string(&path).unwrap();
    config.push('\n');
    config.push_str(tables);
    std::fs::write(path, config).unwrap();
}

fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// `mcp/list` until `done` holds for the named server, or panics after a while.
fn wait_for_server(env: &CliEnv, name: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + STATE_WAIT;
    loop {
        let list = env.rpc_ok("mcp/list", json!({}));
        let server = list["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|server| server["name"] == name)
            .cloned()
            .unwrap_or(Value::Null);
        if done(&server) {
            return server;
        }
        assert!(Instant::now() < deadline, "server {name} never got there: {server}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_stdio_server_s_tools_are_listed_called_by_the_model_and_recorded() {
    let Some(script) = server_script("server-everything") else { return };
    let mut env = CliEnv::configured(vec![
        Reply::tool_call("mcp__everything__echo", json!({"message": "hello over stdio"})),
        Reply::text("The server echoed."),
    ]);
    configure(
        &env,
        &format!(
            "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\n",
            toml_string(&script.display().to_string())
        ),
    );
    env.daemon.spawn();
    let server = wait_for_server(&env, "everything", |s| s["state"] == "ready");
    assert_eq!(server["transport"], "stdio");
    assert_eq!(server["scope"], "daemon");
    let tools: Vec<&str> =
        server["tools"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(tools.contains(&"mcp__everything__echo"), "{tools:?}");
    assert!(tools.contains(&"mcp__everything__get-sum"), "{tools:?}");
    // `rein mcp list` shows the same.
    let listed = env.run(&["mcp", "list"]);
    assert_exit(&listed, 0);
    assert!(stdout(&listed).contains("mcp__everything__echo"), "{}", stdout(&listed));

    let output = env.run(&["run", "--json", "--approve", "yolo", "echo something"]);
    assert_exit(&output, 0);
    let lines = json_lines(&stdout(&output));
    let end = events(&lines, "tool_execution_end");
    assert_eq!(end[0]["result"]["is_error"], false, "{}", end[0]);
    assert!(end[0]["result"].to_string().contains("Echo: hello over stdio"), "{}", end[0]);
    let requests = env.requests();
    // The model was offered the tool with the server's schema, and saw its result.
    assert!(request_mentions(&requests[0], "mcp__everything__echo"));
    assert!(request_mentions(&requests[0], "Message to echo"));
    assert!(request_mentions(&requests[1], "Echo: hello over stdio"));
    // The result is recorded in the session.
    let id = session_id(&stderr(&output));
    let messages = env.messages(&id);
    assert!(
        messages.iter().any(|m| m["role"] == "tool_result"
            && m.to_string().contains("Echo: hello over stdio")),
        "{messages:?}"
    );
}

#[test]
fn a_server_that_crashes_is_reported_restarted_and_usable_again() {
    let Some(script) = server_script("server-everything") else { return };
    let mut env = CliEnv::configured(vec![
        Reply::tool_call("mcp__everything__get-sum", json!({"a": 20, "b": 22})),
        Reply::text("The sum is known."),
    ]);
    let pid_file = env.daemon.home().join("everything.pid");
    // A wrapper that records the server's pid, so the test can kill it.
    let command = format!("echo $$ > {}; exec node {} stdio", pid_file.display(), script.display());
    configure(
        &env,
        &format!(
            "[mcp_servers.everything]\ncommand = \"sh\"\nargs = [\"-c\", {}]\n",
            toml_string(&command)
        ),
    );
    env.daemon.spawn();
    wait_for_server(&env, "everything", |s| s["state"] == "ready");
    let mut daemon_events = env.daemon.connect();
    daemon_events.call_ok(1, "daemon/subscribe", json!({}));

    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL)
        .unwrap();

    // Every client subscribed to the daemon hears that it failed.
    let failed = loop {
        let notification = daemon_events.next_notification();
        let event = &notification["params"]["result"];
        if event["kind"] == "mcp_server_status" && event["server"]["state"] == "failed" {
            break event.clone();
        }
    };
    assert!(failed["server"]["error"].is_string(), "{failed}");
    let back = wait_for_server(&env, "everything", |s| {
        s["state"] == "ready" && s["restarts"].as_u64() >= Some(1)
    });
    assert!(back["tools"].as_array().unwrap().len() > 1);

    let output = env.run(&["run", "--json", "--approve", "yolo", "add"]);
    assert_exit(&output, 0);
    let lines = json_lines(&stdout(&output));
    let end = events(&lines, "tool_execution_end");
    assert_eq!(end[0]["result"]["is_error"], false, "{}", end[0]);
    assert!(end[0]["result"].to_string().contains("42"), "{}", end[0]);
}

/// A free port on 127.0.0.1.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Kills the HTTP server when the test ends.
struct ServerProcess(std::process::Child);

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_streamable_http_server_with_a_bearer_token_from_the_environment() {
    let Some(script) = server_script("server-everything") else { return };
    let port = free_port();
    let _server = ServerProcess(
        std::process::Command::new("node")
            .arg("--require")
            .arg(servers_dir().join("localhost-only.cjs"))
            .arg(&script)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + STATE_WAIT;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the HTTP server did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut env = CliEnv::configured(vec![
        Reply::tool_call("mcp__web__get-sum", json!({"a": 2, "b": 3})),
        Reply::text("Five."),
    ]);
    configure(
        &env,
        &format!(
            "[mcp_servers.web]\nurl = \"http://127.0.0.1:{port}/mcp\"\nbearer_token_env_var = \"REIN_TEST_MCP_TOKEN\"\n[mcp_servers.web.headers]\nX-Test = \"yes\"\n"
        ),
    );
    env.daemon.spawn_with(|command| {
        command.env("REIN_TEST_MCP_TOKEN", "not-a-real-secret");
    });
    let server = wait_for_server(&env, "web", |s| s["state"] == "ready");
    assert_eq!(server["transport"], "http");
    let output = env.run(&["run", "--json", "--approve", "yolo", "sum"]);
    assert_exit(&output, 0);
    let lines = json_lines(&stdout(&output));
    let end = events(&lines, "tool_execution_end");
    assert_eq!(end[0]["result"]["is_error"], false, "{}", end[0]);
    assert!(end[0]["result"].to_string().contains('5'), "{}", end[0]);
}

#[test]
fn read_only_tools_run_without_asking_under_auto_edit_and_others_ask() {
    let Some(script) = server_script("server-filesystem") else { return };
    let mut env = CliEnv::configured(vec![]);
    let project = env.project_dir();
    std::fs::write(project.join("notes.txt"), "the notes say 7\n").unwrap();
    env.fake.push(Reply::tool_call(
        "mcp__fs__read_text_file",
        json!({"path": project.join("notes.txt").display().to_string()}),
    ));
    env.fake.push(Reply::tool_call(
        "mcp__fs__write_file",
        json!({"path": project.join("new.txt").display().to_string(), "content": "x"}),
    ));
    env.fake.push(Reply::text("done"));
    configure(
        &env,
        &format!(
            "[mcp_servers.fs]\ncommand = \"node\"\nargs = [{}, {}]\ndisabled_tools = [\"move_file\"]\n",
            toml_string(&script.display().to_string()),
            toml_string(&project.display().to_string())
        ),
    );
    env.daemon.spawn();
    let server = wait_for_server(&env, "fs", |s| s["state"] == "ready");
    let tools = server["tools"].to_string();
    assert!(tools.contains("mcp__fs__read_text_file") && !tools.contains("move_file"), "{tools}");
    // `rein run` without a terminal cannot answer approvals: a call that asks is denied.
    let output = env.run(&["run", "--json", "--approve", "auto-edit", "read then write"]);
    assert_exit(&output, 0);
    let lines = json_lines(&stdout(&output));
    let end = events(&lines, "tool_execution_end");
    assert_eq!(end.len(), 2);
    assert_eq!(end[0]["result"]["is_error"], false, "{}", end[0]);
    assert!(end[0]["result"].to_string().contains("the notes say 7"), "{}", end[0]);
    assert_eq!(end[1]["result"]["is_error"], true, "{}", end[1]);
    assert_eq!(events(&lines, "approval_requested").len(), 1);
    assert!(!project.join("new.txt").exists());
}

/// `mcp/list` of a session until `done` holds for its named server.
fn wait_for_session_server(
    env: &CliEnv,
    session: &str,
    name: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + STATE_WAIT;
    loop {
        let list = env.rpc_ok("mcp/list", json!({"session_id": session}));
        let server = list["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|server| server["name"] == name)
            .cloned()
            .unwrap_or(Value::Null);
        if done(&server) {
            return server;
        }
        assert!(Instant::now() < deadline, "server {name} never got there: {server}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn project_servers_need_trust_and_editors_pass_their_own() {
    let Some(script) = server_script("server-everything") else { return };
    let mut env = CliEnv::configured(vec![]);
    env.daemon.spawn();
    let project = env.project_dir();
    std::fs::create_dir_all(project.join(".rein")).unwrap();
    std::fs::write(
        project.join(".rein/config.toml"),
        format!(
            "[mcp_servers.proj]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\n",
            toml_string(&script.display().to_string())
        ),
    )
    .unwrap();
    let cwd = project.display().to_string();
    // Untrusted: the project's server is not started.
    let untrusted = env.rpc_ok("session/create", json!({"cwd": cwd}));
    let id = untrusted["session_id"].as_str().unwrap();
    let listed = env.rpc_ok("mcp/list", json!({"session_id": id}));
    assert_eq!(listed["servers"], json!([]), "{listed}");
    // Trusted: it is, as the session's own.
    assert_exit(&env.run(&["trust", &cwd]), 0);
    let trusted = env.rpc_ok("session/create", json!({"cwd": cwd}));
    let id = trusted["session_id"].as_str().unwrap().to_string();
    let server = wait_for_session_server(&env, &id, "proj", |s| s["state"] == "ready");
    assert_eq!(server["scope"], "session");
    assert_eq!(server["session_id"], id.as_str());
    // An editor's servers come with session/create (the ACP adapter passes session/new's).
    let with_editor = env.rpc_ok(
        "session/create",
        json!({"cwd": cwd, "mcp_servers": {"editor": {"command": "node", "args": [script.display().to_string(), "stdio"]}}}),
    );
    let id = with_editor["session_id"].as_str().unwrap().to_string();
    let server = wait_for_session_server(&env, &id, "editor", |s| s["state"] == "ready");
    assert!(server["tools"].to_string().contains("mcp__editor__echo"), "{server}");
}

#[test]
fn a_server_whose_tools_change_is_listed_again_and_the_next_run_offers_the_new_tool() {
    // The growing-tools server (tests/mcp-servers/growing-tools.mjs) runs on the SDK that
    // server-everything brings along.
    if server_script("server-everything").is_none() {
        return;
    }
    let script = servers_dir().join("growing-tools.mjs");
    let mut env = CliEnv::configured(vec![
        Reply::tool_call("mcp__grow__add_tool", json!({})),
        Reply::text("Added."),
        Reply::tool_call("mcp__grow__added_tool", json!({})),
        Reply::text("Done."),
    ]);
    configure(
        &env,
        &format!(
            "[mcp_servers.grow]\ncommand = \"node\"\nargs = [{}]\n",
            toml_string(&script.display().to_string())
        ),
    );
    env.daemon.spawn();
    let server = wait_for_server(&env, "grow", |s| s["state"] == "ready");
    assert_eq!(server["tools"], json!(["mcp__grow__add_tool"]), "{server}");

    let first = env.run(&["run", "--json", "--approve", "yolo", "grow the server"]);
    assert_exit(&first, 0);
    // The server announced its new tool; the daemon listed its tools again.
    let server = wait_for_server(&env, "grow", |s| {
        s["tools"].as_array().is_some_and(|tools| tools.len() == 2)
    });
    assert!(server["tools"].to_string().contains("mcp__grow__added_tool"), "{server}");

    let second = env.run(&["run", "--json", "--approve", "yolo", "--continue", "use it"]);
    assert_exit(&second, 0);
    let requests = env.requests();
    assert_eq!(requests.len(), 4, "two runs of two requests");
    assert!(!request_mentions(&requests[0], "mcp__grow__added_tool"));
    assert!(request_mentions(&requests[2], "mcp__grow__added_tool"));
    let lines = json_lines(&stdout(&second));
    let end = events(&lines, "tool_execution_end");
    assert!(end[0]["result"].to_string().contains("the late tool ran"), "{}", end[0]);
}
