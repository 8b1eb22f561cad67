# leadgate merchant snippet, Python 3: Path B (digest -> lookup -> lead_token -> a call), then Path A.
# pip install PyJWT   (Path A only; Path B needs the standard library alone)
import hashlib, hmac, json, os, sys, time, urllib.error, urllib.parse, urllib.request

base = os.environ.get("LEADGATE_URL", "http://127.0.0.1:8080")
api_key = os.environ.get("LEADGATE_API_KEY", "")
secret = os.environ.get("LEADGATE_SIGNING_SECRET", "")
customer_id = os.environ.get("CUSTOMER_ID", "shop-42")
if not api_key or not secret:
    sys.exit("set LEADGATE_API_KEY and LEADGATE_SIGNING_SECRET (the key's signing secret, from your secret store)")
key_headers = {"x-apikey": api_key, "x-source": "web"}


def get(path, headers):
    """GET with the key's headers: (status, JSON body or None)."""
    request = urllib.request.Request(base + path, headers={**key_headers, **headers})
    try:
        response = urllib.request.urlopen(request)
    except urllib.error.HTTPError as refused:  # 4xx/5xx: leadgate's problem+json
        response = refused
    with response:
        body = response.read()
        is_json = "json" in (response.headers.get("content-type") or "")
        return response.status, json.loads(body) if is_json else None


# Path B: your server knows only its own customer id. Sign it with the time, look the lead up.
ts = str(int(time.time()))
digest = hmac.new(secret.encode(), f"{customer_id}:{ts}".encode(), hashlib.sha256).hexdigest()
status, answer = get(
    "/api/v2/merchant/leads/lookup?customer_id=" + urllib.parse.quote(customer_id, safe=""),
    {"x-timestamp": ts, "x-leaddigest": digest},
)
if status != 200:
    sys.exit(f"lookup refused: {status} {answer['code']}")
lead = answer["lead"]
print(f"path B: lookup {status}, lead {lead['_id']}, token for {answer['expires_in']} s")

# The browser or app sends the lead token on every customer-scoped call.
status, _ = get("/api/v2/merchant/orders", {"x-leadtoken": answer["lead_token"]})
print(f"path B: GET /api/v2/merchant/orders with the token: {status}")

# Path A: your server knows the lead's id: sign the token yourself (HS256, lead_id, iat, exp).
try:
    import jwt  # PyJWT: Path A only
except ImportError:
    print("path A: skipped (pip install PyJWT)")
    sys.exit(0)
now = int(time.time())
token = jwt.encode({"lead_id": lead["_id"], "iat": now, "exp": now + 3600}, secret, algorithm="HS256")
status, _ = get("/api/v2/merchant/orders", {"x-leadtoken": token})
print(f"path A: GET /api/v2/merchant/orders with a token signed here: {status}")
