"""What the cold-start scripts share: the fake provider they talk to, the configuration that
names it, and the environment a `rein` of one build runs with."""
import os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def start_provider(tls=False, tool_first=False):
    """Starts fake_provider.py on 127.0.0.1. Returns the process, its base URL and the
    variables a run needs to trust it: none over plain HTTP; with `tls`, a certificate made
    here with openssl, added to a copy of the system's bundle (SSL_CERT_FILE, with SSL_CERT_DIR
    still the system's directory, so the daemon reads as many roots as by default). With
    `tool_first`, a request not ending with a tool result is answered with a `bash` call."""
    serve = [sys.executable, os.path.join(HERE, "fake_provider.py")]
    trust = {}
    if tls:
        certs = tempfile.mkdtemp()
        cert, key, bundle = (os.path.join(certs, n) for n in ("cert.pem", "key.pem", "bundle.pem"))
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-addext", "basicConstraints=critical,CA:FALSE",
                        "-addext", "extendedKeyUsage=serverAuth",
                        "-keyout", key, "-out", cert], check=True, capture_output=True)
        with open(bundle, "w") as out:
            out.write(open("/etc/ssl/certs/ca-certificates.crt").read() + open(cert).read())
        serve += [cert, key]
        trust = {"SSL_CERT_FILE": bundle, "SSL_CERT_DIR": "/etc/ssl/certs"}
    env = dict(os.environ, TOOL_FIRST="1" if tool_first else "0")
    process = subprocess.Popen(serve, stdout=subprocess.PIPE, text=True, env=env)
    port = int(process.stdout.readline())
    scheme = "https" if tls else "http"
    return process, f"{scheme}://127.0.0.1:{port}/v1", trust


def write_config(home, base_url, top="", model=""):
    """Writes `home`'s config.toml: the fake provider at `base_url`, no key, its model the
    default; `top` adds top-level settings, `model` settings of the model's own table."""
    with open(os.path.join(home, "config.toml"), "w") as config:
        config.write(f'model = "fake/test-model"\n{top}[providers.fake]\napi = "openai-chat"\n'
                     f'base_url = "{base_url}"\napi_key_env = ""\n')
        if model:
            config.write(f'[providers.fake.models."test-model"]\n{model}')


def client_env(home, build):
    """The environment of a `rein` from `build` (a directory with `rein` and `reind`) on
    `home`: this process's, without any `*_API_KEY` variable."""
    env = {name: value for name, value in os.environ.items() if not name.endswith("_API_KEY")}
    env.update(REIN_HOME=home, REIN_SOCKET=os.path.join(home, "run", "reind.sock"),
               REIN_DAEMON_BIN=os.path.join(build, "reind"), NO_COLOR="1")
    return env
