<?php
// leadgate merchant snippet, PHP 8: Path B (digest -> lookup -> lead_token -> a call), then Path A.
// composer require firebase/php-jwt   (Path A only; Path B needs PHP alone)
declare(strict_types=1);

$base = getenv('LEADGATE_URL') ?: 'http://127.0.0.1:8080';
$apiKey = getenv('LEADGATE_API_KEY') ?: '';
$secret = getenv('LEADGATE_SIGNING_SECRET') ?: '';
$customerId = getenv('CUSTOMER_ID') ?: 'shop-42';
if ($apiKey === '' || $secret === '') {
    fwrite(STDERR, "set LEADGATE_API_KEY and LEADGATE_SIGNING_SECRET (the key's signing secret, from your secret store)\n");
    exit(2);
}

/** GET with the key's headers; returns [status, decoded JSON body]. */
function leadgate_get(string $url, array $headers): array
{
    global $apiKey;
    $lines = ["x-apikey: $apiKey", 'x-source: web'];
    foreach ($headers as $name => $value) {
        $lines[] = "$name: $value";
    }
    $context = stream_context_create(['http' => ['header' => $lines, 'ignore_errors' => true]]);
    $body = file_get_contents($url, false, $context);
    preg_match('{HTTP/\S+ (\d{3})}', $http_response_header[0], $status);
    return [(int) $status[1], json_decode((string) $body, true)];
}

// Path B: your server knows only its own customer id. Sign it with the time, look the lead up.
$ts = (string) time();
$digest = hash_hmac('sha256', "$customerId:$ts", $secret);
[$status, $answer] = leadgate_get(
    "$base/api/v2/merchant/leads/lookup?customer_id=" . rawurlencode($customerId),
    ['x-timestamp' => $ts, 'x-leaddigest' => $digest],
);
if ($status !== 200) {
    fwrite(STDERR, "lookup refused: $status {$answer['code']}\n");
    exit(1);
}
$lead = $answer['lead'];
echo "path B: lookup $status, lead {$lead['_id']}, token for {$answer['expires_in']} s\n";

// The browser or app sends the lead token on every customer-scoped call.
[$status] = leadgate_get("$base/api/v2/merchant/orders", ['x-leadtoken' => $answer['lead_token']]);
echo "path B: GET /api/v2/merchant/orders with the token: $status\n";

// Path A: your server knows the lead's id: sign the token yourself (HS256, lead_id, iat, exp).
if (is_file(__DIR__ . '/vendor/autoload.php')) {
    require __DIR__ . '/vendor/autoload.php';
}
if (!class_exists(\Firebase\JWT\JWT::class)) {
    echo "path A: skipped (composer require firebase/php-jwt)\n";
    exit(0);
}
$now = time();
$token = \Firebase\JWT\JWT::encode(['lead_id' => $lead['_id'], 'iat' => $now, 'exp' => $now + 3600], $secret, 'HS256');
[$status] = leadgate_get("$base/api/v2/merchant/orders", ['x-leadtoken' => $token]);
echo "path A: GET /api/v2/merchant/orders with a token signed here: $status\n";
