"""One HTTP(S) readiness probe for up.sh (so the twin needs no curl).

usage: probe.py URL [--ca FILE] [--cert FILE --key FILE] [--insecure] [--post] [--any-status]
Exit 0 when the server answers 2xx (or anything, with --any-status), 1 otherwise.
"""
import argparse
import ssl
import sys
import urllib.error
import urllib.request

parser = argparse.ArgumentParser()
parser.add_argument("url")
parser.add_argument("--ca")
parser.add_argument("--cert")
parser.add_argument("--key")
parser.add_argument("--insecure", action="store_true",
                    help="skip server verification (self-signed in-memory certificates)")
parser.add_argument("--post", action="store_true", help="POST an empty JSON object")
parser.add_argument("--any-status", action="store_true",
                    help="any HTTP answer counts (the TLS handshake is what is checked)")
args = parser.parse_args()

ctx = None
if args.url.startswith("https:"):
    ctx = ssl.create_default_context(cafile=args.ca)
    if args.insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if args.cert:
        ctx.load_cert_chain(args.cert, args.key)
data = b"{}" if args.post else None
req = urllib.request.Request(args.url, data=data, headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req, context=ctx, timeout=3) as resp:
        sys.exit(0 if 200 <= resp.status < 300 or args.any_status else 1)
except urllib.error.HTTPError:
    sys.exit(0 if args.any_status else 1)
except (OSError, ssl.SSLError):
    sys.exit(1)
