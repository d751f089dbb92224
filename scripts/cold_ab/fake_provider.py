# A minimal OpenAI Chat Completions server on 127.0.0.1 for scripts/cold_ab/ab.py: every POST
# gets one streamed "ok" (SSE, one write, TCP_NODELAY). Prints its port on the first line.
# Also behind scripts/cold_ab/history_ab.py (see TOOL_FIRST below).
# With two arguments, CERT and KEY (PEM files), it serves HTTPS instead of HTTP.
import json, os, ssl, sys, socketserver
from http.server import BaseHTTPRequestHandler, HTTPServer
def chunk(delta, finish):
    return {"id":"c","object":"chat.completion.chunk","created":0,"model":"test-model",
            "choices":[{"index":0,"delta":delta,"finish_reason":finish}]}
events=[chunk({"role":"assistant","content":""},None),chunk({"content":"ok"},None),chunk({},"stop"),
        {"id":"c","object":"chat.completion.chunk","created":0,"model":"test-model","choices":[],
         "usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}]
body=b"".join(b"data: "+json.dumps(e).encode()+b"\n\n" for e in events)+b"data: [DONE]\n\n"
# With TOOL_FIRST=1 in the environment, a request whose last message is not a tool result is
# answered with a `bash` call (`true`) instead: a task of two requests, as in the growth bench.
tool_first=os.environ.get("TOOL_FIRST")=="1"
call=b"".join(b"data: "+json.dumps(e).encode()+b"\n\n" for e in [
    chunk({"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"bash","arguments":""}}]},None),
    chunk({"tool_calls":[{"index":0,"function":{"arguments":json.dumps({"command":"true"})}}]},None),
    chunk({},"tool_calls"),events[-1]])+b"data: [DONE]\n\n"
class H(BaseHTTPRequestHandler):
    protocol_version="HTTP/1.1"
    def do_POST(self):
        n=int(self.headers.get("content-length","0")); request=self.rfile.read(n)
        reply=body
        if tool_first and json.loads(request)["messages"][-1]["role"]!="tool": reply=call
        head=b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: "+str(len(reply)).encode()+b"\r\n\r\n"
        self.wfile.write(head+reply); self.wfile.flush()
    def do_GET(self):
        b=b'{"data":[]}'; self.send_response(200); self.send_header("content-length",str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self,*a): pass
import socket
tls=None
if len(sys.argv)==3:
    tls=ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); tls.load_cert_chain(sys.argv[1],sys.argv[2])
class S(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads=True
    def get_request(self):
        c,a=self.socket.accept(); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return (tls.wrap_socket(c,server_side=True) if tls else c),a
s=S(("127.0.0.1",0),H); print(s.server_address[1],flush=True); s.serve_forever()
