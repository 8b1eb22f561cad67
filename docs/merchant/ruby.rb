# leadgate merchant snippet, Ruby: Path B (digest -> lookup -> lead_token -> a call), then Path A.
# gem install jwt   (ruby-jwt, Path A only; Path B needs the standard library alone)
require 'json'
require 'net/http'
require 'openssl'
require 'uri'

base = ENV.fetch('LEADGATE_URL', 'http://127.0.0.1:8080')
api_key = ENV.fetch('LEADGATE_API_KEY', '')
secret = ENV.fetch('LEADGATE_SIGNING_SECRET', '')
customer_id = ENV.fetch('CUSTOMER_ID', 'shop-42')
if api_key.empty? || secret.empty?
  abort "set LEADGATE_API_KEY and LEADGATE_SIGNING_SECRET (the key's signing secret, from your secret store)"
end
key_headers = { 'x-apikey' => api_key, 'x-source' => 'web' }

get = lambda do |path, headers|
  response = Net::HTTP.get_response(URI("#{base}#{path}"), key_headers.merge(headers))
  json = response['content-type'].to_s.include?('json')
  [response.code.to_i, json ? JSON.parse(response.body) : nil]
end

# Path B: your server knows only its own customer id. Sign it with the time, look the lead up.
ts = Time.now.to_i.to_s
digest = OpenSSL::HMAC.hexdigest('SHA256', secret, "#{customer_id}:#{ts}")
status, answer = get.call("/api/v2/merchant/leads/lookup?customer_id=#{URI.encode_www_form_component(customer_id).gsub('+', '%20')}",
                          { 'x-timestamp' => ts, 'x-leaddigest' => digest })
abort "lookup refused: #{status} #{answer['code']}" unless status == 200
lead = answer['lead']
puts "path B: lookup #{status}, lead #{lead['_id']}, token for #{answer['expires_in']} s"

# The browser or app sends the lead token on every customer-scoped call.
status, = get.call('/api/v2/merchant/orders', { 'x-leadtoken' => answer['lead_token'] })
puts "path B: GET /api/v2/merchant/orders with the token: #{status}"

# Path A: your server knows the lead's id: sign the token yourself (HS256, lead_id, iat, exp).
begin
  require 'jwt' # ruby-jwt: Path A only
rescue LoadError
  puts 'path A: skipped (gem install jwt)'
  exit 0
end
now = Time.now.to_i
token = JWT.encode({ lead_id: lead['_id'], iat: now, exp: now + 3600 }, secret, 'HS256')
status, = get.call('/api/v2/merchant/orders', { 'x-leadtoken' => token })
puts "path A: GET /api/v2/merchant/orders with a token signed here: #{status}"
