#!/usr/bin/env python3
"""A webhook endpoint for tests and trials: HTTPS, every delivery verified with the `standardwebhooks`
package (an implementation nobody in this project wrote), each one logged as a JSON line.

  webhook-receiver.py --cert C --key K --secret whsec_... --log deliveries.jsonl [--port 0]
                      [--fail-users alice,bob --release-file F] [--retry-after S] [--status N]
                      [--schemas docs/schemas] [--answer-bytes N] [--stall-body] [--hold-file F]

Prints the port it listens on as its first line. A delivery whose entitlement's user is in --fail-users
is answered 503 (with Retry-After when given) until --release-file exists; --status answers every
delivery with that status instead of 204 (--answer-bytes pads its answer to N bytes; --stall-body
sends the head and a little of the body, then waits). While --hold-file exists, a delivery is logged
with "answer": 0 on arrival and never answered. A delivery that does not verify is answered 400 and logged
with "verified": false. Every delivery's body and headers are logged as they came (forwarded requests are
compared byte for byte). With --schemas, data.event and data.entitlement are validated against
event.schema.json and entitlement.schema.json there, and what does not hold is logged as "schemaErrors".
"""
import argparse
import http.server
import json
import os
import ssl
import sys
import threading
import time

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--fail-users", default="")
    parser.add_argument("--release-file", default="")
    parser.add_argument("--retry-after", default="")
    parser.add_argument("--status", type=int, default=204)
    parser.add_argument("--schemas", default="")
    parser.add_argument("--answer-bytes", type=int, default=0)
    parser.add_argument("--stall-body", action="store_true")
    parser.add_argument("--hold-file", default="")
    args = parser.parse_args()
    validators = {}
    if args.schemas:
        import jsonschema
        for part, name in (("event", "event.schema.json"), ("entitlement", "entitlement.schema.json")):
            with open(os.path.join(args.schemas, name)) as schema:
                validators[part] = jsonschema.Draft202012Validator(json.load(schema), format_checker=jsonschema.FormatChecker())
    webhook = Webhook(args.secret)
    failing = {user for user in args.fail_users.split(",") if user}
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length)
            headers = {name.lower(): value for name, value in self.headers.items()}
            entry = {"id": headers.get("webhook-id"), "timestamp": headers.get("webhook-timestamp"),
                     "contentType": headers.get("content-type"), "path": self.path,
                     "signatures": headers.get("webhook-signature", "").split(" "),
                     "body": body.decode("utf-8", "replace"), "headers": headers}
            if args.hold_file and os.path.exists(args.hold_file):
                # Held: logged on arrival, then never answered (the connection closes once the file is gone).
                with lock:
                    with open(args.log, "a") as log:
                        log.write(json.dumps(dict(entry, answer=0, verified=False)) + "\n")
                while os.path.exists(args.hold_file):
                    time.sleep(0.05)
                self.close_connection = True
                return
            try:
                payload = webhook.verify(body, headers)
                entry["verified"] = True
            except (WebhookVerificationError, ValueError) as error:
                payload = None
                entry["verified"] = False
                entry["error"] = str(error)
            status = args.status
            if payload is None:
                status = 400
            else:
                data = payload.get("data", {})
                entitlement = data.get("entitlement", {})
                event = data.get("event", {})
                entry.update({"ceId": payload.get("id"), "ceType": payload.get("type"), "ceSubject": payload.get("subject"),
                              "ceSource": payload.get("source"), "specversion": payload.get("specversion"),
                              "user": entitlement.get("user"), "product": entitlement.get("product"),
                              "active": entitlement.get("active"), "state": entitlement.get("state"),
                              "purchaseId": entitlement.get("purchaseId"), "sequence": entitlement.get("sequence"),
                              "eventId": event.get("id"), "eventType": event.get("type"), "eventSubject": event.get("subject"),
                              "entitlementEventId": entitlement.get("eventId"), "expiresAt": entitlement.get("expiresAt")})
                entry["schemaErrors"] = [f"{part}: {error.message}" for part, validator in validators.items()
                                         for error in validator.iter_errors(data.get(part))]
                if entitlement.get("user") in failing and not (args.release_file and os.path.exists(args.release_file)):
                    status = 503
            entry["answer"] = status
            with lock:
                with open(args.log, "a") as log:
                    log.write(json.dumps(entry) + "\n")
            reply = b"" if status == 204 else json.dumps({"received": entry.get("id")}).encode()
            if args.answer_bytes:
                reply = (reply + b" " * args.answer_bytes)[:max(len(reply), args.answer_bytes)]
            self.send_response(status)
            if status == 503 and args.retry_after:
                self.send_header("Retry-After", args.retry_after)
            self.send_header("Content-Type", "application/json")
            if args.stall_body:
                self.send_header("Content-Length", "1000")
                self.end_headers()
                self.wfile.write(b"{\"stalled\":")
                self.wfile.flush()
                time.sleep(30)
                return
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *_):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
