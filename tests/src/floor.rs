//! The floor benchmarks compare rein with: a minimal client doing only what cannot be avoided
//! (posting a request body to the provider and reading the streamed reply to its end), with
//! nothing of rein in between.

use std::io::{Read, Write};

/// Posts `body` to `path` (e.g. `/v1/chat/completions`) of the provider at `base_url`
/// (`http://127.0.0.1:PORT/v1`) over a fresh connection and reads the reply until its
/// `[DONE]` line or the end of the connection. Returns the reply's bytes.
pub fn post(base_url: &str, path: &str, body: &[u8]) -> std::io::Result<Vec<u8>> {
    let address = base_url.trim_start_matches("http://").split('/').next().unwrap_or_default();
    let mut stream = std::net::TcpStream::connect(address)?;
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    let mut reply = Vec::new();
    let mut chunk = [0_u8; 16 * 1024];
    loop {
        let read = stream.read(&mut chunk)?;
        if read == 0 {
            break;
        }
        reply.extend_from_slice(&chunk[..read]);
        if reply.windows(6).any(|w| w == b"[DONE]") {
            break;
        }
    }
    Ok(reply)
}
