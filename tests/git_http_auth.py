"""A smart-HTTP git server over `git http-backend` that asks for a token, as GitHub does.

Usage: git_http_auth.py PROJECT_ROOT TOKEN PORT_FILE AUTH_LOG
Serves the bare repositories under PROJECT_ROOT (fetch and push) to requests whose
Authorization header is `basic base64("x-access-token:TOKEN")`; any other gets 401. Every
request's Authorization header (or "-") is appended to AUTH_LOG, one a line. The chosen port
is written to PORT_FILE.
"""
import base64
import http.server
import os
import subprocess
import sys

root, token, port_file, auth_log = sys.argv[1:5]
want = "basic " + base64.b64encode(("x-access-token:" + token).encode()).decode()


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def serve(self):
        auth = self.headers.get("Authorization", "-")
        with open(auth_log, "a") as f:
            f.write(auth + "\n")
        if auth.lower() != want.lower():
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path, _, query = self.path.partition("?")
        env = dict(os.environ, GIT_PROJECT_ROOT=root, GIT_HTTP_EXPORT_ALL="1", PATH_INFO=path,
                   QUERY_STRING=query, REQUEST_METHOD=self.command, REMOTE_USER="x-access-token",
                   CONTENT_TYPE=self.headers.get("Content-Type", ""), CONTENT_LENGTH=str(len(body)))
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
        head, _, rest = out.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.decode().split("\r\n"):
            k, _, v = line.partition(": ")
            if k.lower() == "status":
                status = int(v.split()[0])
            elif k:
                headers.append((k, v))
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(rest)))
        self.end_headers()
        self.wfile.write(rest)

    do_GET = serve
    do_POST = serve


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
