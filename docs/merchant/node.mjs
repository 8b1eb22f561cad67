// leadgate merchant snippet, Node.js 22+: Path B (digest → lookup → lead_token → a call), then Path A.
// npm install @leadgate/client   (no dependencies: it needs nothing but node:crypto)
import { leadDigest, signLeadToken } from '@leadgate/client';

const base = process.env.LEADGATE_URL ?? 'http://127.0.0.1:8080';
const apiKey = process.env.LEADGATE_API_KEY ?? '';
const secret = process.env.LEADGATE_SIGNING_SECRET ?? '';
const customerId = process.env.CUSTOMER_ID ?? 'shop-42';
if (apiKey === '' || secret === '') {
  console.error(
    "set LEADGATE_API_KEY and LEADGATE_SIGNING_SECRET (the key's signing secret, from your secret store)",
  );
  process.exit(2);
}
const keyHeaders = { 'x-apikey': apiKey, 'x-source': 'web' };

// Path B: your server knows only its own customer id. Sign it with the time, look the lead up.
const ts = Math.floor(Date.now() / 1000);
const lookup = await fetch(
  `${base}/api/v2/merchant/leads/lookup?customer_id=${encodeURIComponent(customerId)}`,
  {
    headers: { ...keyHeaders, 'x-timestamp': String(ts), 'x-leaddigest': leadDigest(secret, customerId, ts) },
  },
);
if (lookup.status !== 200) {
  console.error(`lookup refused: ${lookup.status} ${(await lookup.json()).code}`);
  process.exit(1);
}
const { lead_token: leadToken, expires_in: expiresIn, lead } = await lookup.json();
console.log(`path B: lookup ${lookup.status}, lead ${lead._id}, token for ${expiresIn} s`);

// The browser or app sends the lead token on every customer-scoped call.
const orders = await fetch(`${base}/api/v2/merchant/orders`, {
  headers: { ...keyHeaders, 'x-leadtoken': leadToken },
});
console.log(`path B: GET /api/v2/merchant/orders with the token: ${orders.status}`);

// Path A: your server knows the lead's id: sign the token yourself (HS256, lead_id, iat, exp).
const own = signLeadToken(secret, lead._id);
const again = await fetch(`${base}/api/v2/merchant/orders`, {
  headers: { ...keyHeaders, 'x-leadtoken': own },
});
console.log(`path A: GET /api/v2/merchant/orders with a token signed here: ${again.status}`);
