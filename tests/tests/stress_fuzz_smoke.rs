//! The fuzz targets' smoke test on stable Rust: every committed corpus seed
//! (`fuzz/corpus/<target>/`) and every kept regression input (`fuzz/regressions/<target>/`)
//! goes through the same harness functions cargo-fuzz calls, then a few hundred
//! deterministic mutations of each seed do too. A harness panics on a broken invariant, so a
//! panic here is a fuzz finding replayed.
//!
//! The seeds are generated here from real protocol values and the fake provider's encoder.
//! `REIN_FUZZ_WRITE_SEEDS=1 cargo test -p rein-testkit --test stress_fuzz_smoke` writes them
//! into `fuzz/corpus/` (done once; the files are committed for cargo-fuzz to start from).

mod stress_support;

use rein_fuzz_harness::{TARGETS, run_target};
use rein_testkit::fake_provider::encode::{self, WireFormat};
use rein_testkit::fake_provider::{Reply, ScriptBlock, ScriptToolCall, ScriptUsage};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use stress_support::Rng;

/// Mutations run per seed (a few seconds for the whole test in a debug build).
const MUTATIONS_PER_SEED: usize = 48;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("fuzz")
}

/// A scratch directory for the session target, in memory when the machine has `/dev/shm`.
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    let builder = tempfile::Builder::new().prefix("rein-fuzz-smoke-").tempdir_in(if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    });
    builder.unwrap_or_else(|e| panic!("cannot create a scratch directory: {e}"))
}

fn lines(prefix: [u8; 2], lines: &[String]) -> Vec<u8> {
    let mut out = prefix.to_vec();
    for line in lines {
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out
}

fn wire_seeds() -> Vec<(String, Vec<u8>)> {
    let request = |id: u64, method: &str, params: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
    };
    let session = "0197a1b2-0000-7000-8000-000000000001";
    let requests = vec![
        request(
            1,
            "initialize",
            json!({"client_name": "fuzz", "protocol_version": "1.0",
                   "capabilities": {"approvals": true}}),
        ),
        request(2, "session/create", json!({"cwd": "/tmp/p", "model": "local/test-model"})),
        request(
            3,
            "session/prompt",
            json!({"session_id": session, "text": "hi",
                                            "when_busy": "follow_up"}),
        ),
        request(4, "session/subscribe", json!({"session_id": session, "after_seq": 3})),
        request(5, "session/fork", json!({"session_id": session, "entry_id": "e1"})),
        request(
            6,
            "approval/respond",
            json!({"session_id": session, "request_id": "r1",
                                              "decision": "allow_once"}),
        ),
        request(7, "session/compact", json!({"session_id": session, "instructions": "short"})),
        request(8, "session/export", json!({"session_id": session, "format": "markdown"})),
        request(9, "session/list", json!({"cwd": "/tmp/p"})),
        request(10, "daemon/info", Value::Null),
    ];
    let messages = vec![
        json!({"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1})
            .to_string(),
        json!({"role": "assistant", "content": [
                  {"type": "thinking", "thinking": "hm", "signature": "sig"},
                  {"type": "tool_call", "id": "c1", "name": "bash",
                   "arguments": {"command": "ls"}}],
               "api": "openai-chat", "provider": "local", "model": "m",
               "usage": {"input": 1, "output": 2}, "stop_reason": "tool_use"})
        .to_string(),
        json!({"id": "e2", "parent_id": "e1", "timestamp": "2026-11-30T10:00:00Z",
               "type": "compaction", "summary": "s", "first_kept_entry_id": "e1",
               "tokens_before": 100})
        .to_string(),
        json!({"seq": 4, "event": {"kind": "agent_end", "reason": "completed"}}).to_string(),
        json!({"type": "lagged", "last_seq": 9}).to_string(),
    ];
    let malformed = vec![
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":".to_string(),
        "[1,2]".to_string(),
        "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"session_id\":5}}"
            .to_string(),
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/prompt\",\"params\":[\"x\"]}"
            .to_string(),
        String::new(),
    ];
    let mut crlf = lines([200, 3], &requests[..3]);
    crlf.extend_from_slice(b"{\"a\":1}\r\n\xff\xfe\n{\"tail\":true}");
    vec![
        ("requests".to_string(), lines([200, 16], &requests)),
        ("protocol-values".to_string(), lines([255, 40], &messages)),
        ("malformed".to_string(), lines([130, 1], &malformed)),
        ("small-limit".to_string(), lines([60, 5], &requests[..4])),
        ("crlf-utf8-tail".to_string(), crlf),
    ]
}

fn provider_replies() -> Vec<(&'static str, Reply)> {
    let call = |name: &str, arguments: Value| ScriptToolCall {
        name: name.to_string(),
        arguments,
        ..ScriptToolCall::default()
    };
    vec![
        ("text", Reply { delta_size: Some(3), ..Reply::text("Hello, wörld! 🎉") }),
        (
            "thinking-text",
            Reply {
                thinking: Some("first think".into()),
                thinking_signature: Some("c2lnbmF0dXJl".into()),
                text: Some("then answer".into()),
                usage: Some(ScriptUsage { input: 120, output: 30, cache_read: 50, cache_write: 7 }),
                ..Reply::default()
            },
        ),
        (
            "tool-calls",
            Reply {
                text: Some("running".into()),
                tool_calls: vec![
                    call("bash", json!({"command": "echo hi"})),
                    call(
                        "edit",
                        json!({"path": "a.rs", "edits": [{"oldText": "a", "newText": "b"}]}),
                    ),
                ],
                delta_size: Some(5),
                ..Reply::default()
            },
        ),
        (
            "blocks-crlf",
            Reply {
                blocks: vec![
                    ScriptBlock::Thinking {
                        thinking: "secret".into(),
                        signature: Some("opaque".into()),
                        redacted: true,
                    },
                    ScriptBlock::Text { text: "mixed".into() },
                    ScriptBlock::ToolCall(ScriptToolCall {
                        raw_arguments: Some("{\"path\": \"x".into()),
                        ..call("read", Value::Null)
                    }),
                ],
                crlf: true,
                ..Reply::default()
            },
        ),
    ]
}

fn provider_seeds() -> Vec<(String, Vec<u8>)> {
    let formats = [WireFormat::Chat, WireFormat::Responses, WireFormat::Anthropic];
    let mut seeds = Vec::new();
    for (api_index, format) in formats.into_iter().enumerate() {
        for (name, reply) in provider_replies() {
            let mut n = 0;
            let mut ids = move || {
                n += 1;
                n
            };
            let events = encode::stream(format, &reply, "fuzz-model", &mut ids);
            let mut input = vec![api_index as u8, 6];
            input.extend(events.concat());
            seeds.push((format!("{format:?}-{name}").to_lowercase(), input));
        }
        let error = encode::context_overflow_body(format);
        let mut input = vec![api_index as u8, 9];
        input.extend_from_slice(format!("event: error\ndata: {error}\n\n").as_bytes());
        seeds.push((format!("{format:?}-error").to_lowercase(), input));
    }
    seeds
}

fn entry(id: &str, parent: Option<&str>, kind: Value) -> String {
    let mut value = json!({"id": id, "parent_id": parent, "timestamp": "2026-11-30T10:00:00Z"});
    if let (Some(object), Value::Object(fields)) = (value.as_object_mut(), kind) {
        object.extend(fields);
    }
    value.to_string()
}

fn user(text: &str) -> Value {
    json!({"type": "message",
           "message": {"role": "user", "content": [{"type": "text", "text": text}]}})
}

fn assistant_calling(ids: &[&str]) -> Value {
    let calls: Vec<Value> = ids
        .iter()
        .map(|id| {
            json!({"type": "tool_call", "id": id, "name": "bash",
                         "arguments": {"command": "ls"}})
        })
        .collect();
    json!({"type": "message", "message": {"role": "assistant", "content": calls,
           "api": "openai-chat", "provider": "local", "model": "m", "stop_reason": "tool_use"}})
}

fn result(id: &str) -> Value {
    json!({"type": "message", "message": {"role": "tool_result", "tool_call_id": id,
           "tool_name": "bash", "content": [{"type": "text", "text": "ok"}]}})
}

fn session_seeds() -> Vec<(String, Vec<u8>)> {
    let file = |mode: u8, lines: Vec<String>, tail: &[u8]| {
        let mut out = vec![mode];
        for line in lines {
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
        }
        out.extend_from_slice(tail);
        out
    };
    let clean = vec![
        entry("a1", None, user("list files")),
        entry("a2", Some("a1"), assistant_calling(&["c1", "c2"])),
        entry("a3", Some("a2"), result("c1")),
        entry("a4", Some("a3"), result("c2")),
    ];
    let dangling = vec![
        entry("b1", None, user("go")),
        entry("b2", Some("b1"), assistant_calling(&["c1", "c2"])),
        entry("b3", Some("b2"), result("c2")),
        entry("b4", Some("b3"), result("c2")),
        entry("b5", Some("b4"), result("zz")),
    ];
    let branched = vec![
        entry("d1", None, user("one")),
        entry("d2", Some("d1"), json!({"type": "model_change", "provider": "p", "model": "m"})),
        entry("d3", Some("d2"), user("two")),
        entry("d4", Some("d1"), json!({"type": "thinking_level_change", "thinking_level": "high"})),
        entry(
            "d5",
            Some("d4"),
            json!({"type": "compaction", "summary": "earlier work",
                                        "first_kept_entry_id": "d4", "tokens_before": 900}),
        ),
        entry("d6", Some("d5"), json!({"type": "label", "target_id": "d3", "label": "keep"})),
        entry("d7", Some("d6"), json!({"type": "session_info", "name": "fuzz"})),
        entry("d8", Some("d7"), json!({"type": "from_the_future", "x": 1})),
        entry("d9", Some("d8"), assistant_calling(&["c9"])),
    ];
    let raw_header = rein_fuzz_harness::session_file::HEADER.as_bytes().to_vec();
    let mut own_header = vec![1];
    own_header.extend_from_slice(&raw_header);
    own_header.extend_from_slice(entry("e1", None, user("hi")).as_bytes());
    own_header.push(b'\n');
    vec![
        ("clean".to_string(), file(0, clean.clone(), b"")),
        ("dangling-duplicate-orphan".to_string(), file(0, dangling, b"")),
        ("branched-compacted".to_string(), file(0, branched, b"")),
        (
            "torn-tail".to_string(),
            file(0, clean.clone(), b"{\"id\":\"a5\",\"parent_id\":\"a4\",\"ty"),
        ),
        (
            "garbage-and-duplicate-id".to_string(),
            file(0, vec![clean[0].clone(), "not json".into(), clean[0].clone()], b"\xff\n"),
        ),
        ("own-header".to_string(), own_header),
        ("bad-header".to_string(), file(1, clean, b"")),
    ]
}

fn edit_seeds() -> Vec<(String, Vec<u8>)> {
    let seed = |fields: &[&str]| fields.join("\0").into_bytes();
    let file = "fn main() {\n    let x = 1;\n\tlet  y = 2;\n    println!(\"{x} {y}\");\n}\n";
    vec![
        ("exact".to_string(), seed(&[file, "let x = 1;", "let x = 10;"])),
        ("whitespace".to_string(), seed(&[file, "  let y = 2;\n", "    let y = 3;\n"])),
        ("ambiguous".to_string(), seed(&[file, "let", "var"])),
        ("two-edits".to_string(), seed(&[file, "fn main", "fn start", "}\n", "} // end\n"])),
        ("overlap".to_string(), seed(&[file, "let x = 1;\n\tlet", "a", "1;\n\tlet  y", "b"])),
        ("crlf".to_string(), seed(&["a\nb\nc\n", "a\r\nb", "x\r\ny"])),
        ("unicode".to_string(), seed(&["αβγ\n  δ ε\n", "δ  ε", "ζ"])),
        ("not-found".to_string(), seed(&[file, "let z = 3;", "nothing"])),
        ("no-change".to_string(), seed(&[file, "main", "main"])),
    ]
}

fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    match target {
        "wire" => wire_seeds(),
        "provider_stream" => provider_seeds(),
        "session_file" => session_seeds(),
        "edit_match" => edit_seeds(),
        other => panic!("no seeds for target {other}"),
    }
}

/// Inputs in a directory, sorted by name (none when it does not exist).
fn inputs_in(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut inputs: Vec<(PathBuf, Vec<u8>)> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| {
            let bytes = std::fs::read(e.path());
            (
                e.path(),
                bytes.unwrap_or_else(|err| panic!("cannot read {}: {err}", e.path().display())),
            )
        })
        .collect();
    inputs.sort();
    inputs
}

/// Bytes that matter to the parsers under test.
const INTERESTING: &[&[u8]] = &[
    b"\n", b"\r\n", b"\n\n", b"\0", b"\"", b"{", b"}", b"[", b"]", b",", b":", b"\\u0000", b"\xff",
    b"\xc3", b"data: ", b"event: ", b"null", b"-1", b"1e999", b"  \t",
];

/// One random edit of `input`: a flipped byte, a cut range, a duplicated range, an inserted
/// interesting token, or a splice with `other`. Bytes 0 and 1 (the targets' settings) are
/// changed too, as the fuzzer would.
fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..=rng.below(3) {
        let at = rng.below(out.len() + 1);
        match rng.below(5) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] ^= 1 << rng.below(8);
            }
            1 if !out.is_empty() => {
                let len = rng.below(out.len() - at.min(out.len()) + 1).min(16);
                out.drain(at.min(out.len())..(at + len).min(out.len()));
            }
            2 if at < out.len() => {
                let len = rng.below(out.len() - at).min(64) + 1;
                let piece = out[at..at + len].to_vec();
                out.splice(at..at, piece);
            }
            3 => {
                let token = INTERESTING[rng.below(INTERESTING.len())];
                out.splice(at..at, token.iter().copied());
            }
            _ if !other.is_empty() => {
                let from = rng.below(other.len());
                let len = rng.below(other.len() - from).min(128) + 1;
                out.splice(at..at, other[from..from + len].iter().copied());
            }
            _ => {}
        }
    }
    out
}

#[test]
fn generated_seeds_are_committed_in_the_corpus() {
    let write = std::env::var_os("REIN_FUZZ_WRITE_SEEDS").is_some();
    for target in TARGETS {
        let dir = fuzz_dir().join("corpus").join(target);
        if write {
            std::fs::create_dir_all(&dir).unwrap();
        }
        for (name, bytes) in seeds(target) {
            let path = dir.join(format!("seed-{name}"));
            if write {
                std::fs::write(&path, &bytes).unwrap();
            }
            let committed = std::fs::read(&path)
                .unwrap_or_else(|e| panic!("{} is missing ({e}); write the seeds", path.display()));
            assert_eq!(committed, bytes, "{} is stale; write the seeds again", path.display());
        }
    }
}

#[test]
fn corpus_regressions_and_mutations_pass_every_harness() {
    let scratch = scratch();
    let mut rng = Rng::new(0x5eed_cafe_f00d_1234);
    let mut runs = 0;
    for target in TARGETS {
        let mut inputs: Vec<(String, Vec<u8>)> = seeds(target)
            .into_iter()
            .map(|(name, bytes)| (format!("generated {name}"), bytes))
            .collect();
        for dir in ["corpus", "regressions"] {
            for (path, bytes) in inputs_in(&fuzz_dir().join(dir).join(target)) {
                inputs.push((path.display().to_string(), bytes));
            }
        }
        assert!(!inputs.is_empty(), "no inputs for {target}");
        for (name, bytes) in &inputs {
            let handled = std::panic::catch_unwind(|| run_target(target, bytes, scratch.path()));
            assert!(matches!(handled, Ok(true)), "{target} failed on {name}");
            runs += 1;
        }
        for (index, (name, bytes)) in inputs.iter().enumerate() {
            let other = &inputs[(index + 1) % inputs.len()].1;
            for round in 0..MUTATIONS_PER_SEED {
                let mutated = mutate(&mut rng, bytes, other);
                let handled =
                    std::panic::catch_unwind(|| run_target(target, &mutated, scratch.path()));
                assert!(
                    matches!(handled, Ok(true)),
                    "{target} failed on mutation {round} of {name}: {:?}",
                    String::from_utf8_lossy(&mutated)
                );
                runs += 1;
            }
        }
    }
    assert!(runs > 1000, "only {runs} runs");
}
