// leadgate merchant snippet, Go: Path B (digest -> lookup -> lead_token -> a call), then Path A.
// go run .   (Path A: golang-jwt v4, vendored beside this file, so it builds offline; Path B: the standard library alone)
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

var (
	base       = env("LEADGATE_URL", "http://127.0.0.1:8080")
	apiKey     = env("LEADGATE_API_KEY", "")
	secret     = env("LEADGATE_SIGNING_SECRET", "")
	customerID = env("CUSTOMER_ID", "shop-42")
)

// get sends a GET with the key's headers and decodes the JSON answer into out (when not nil).
func get(path string, headers map[string]string, out any) int {
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("x-apikey", apiKey)
	req.Header.Set("x-source", "web")
	for name, value := range headers {
		req.Header.Set(name, value)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, "leadgate unreachable:", err)
		os.Exit(1)
	}
	defer res.Body.Close()
	if out != nil {
		_ = json.NewDecoder(res.Body).Decode(out)
	}
	return res.StatusCode
}

func main() {
	if apiKey == "" || secret == "" {
		fmt.Fprintln(os.Stderr, "set LEADGATE_API_KEY and LEADGATE_SIGNING_SECRET (the key's signing secret, from your secret store)")
		os.Exit(2)
	}

	// Path B: your server knows only its own customer id. Sign it with the time, look the lead up.
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(customerID + ":" + ts))
	var answer struct {
		LeadToken string         `json:"lead_token"`
		ExpiresIn int            `json:"expires_in"`
		Lead      map[string]any `json:"lead"`
		Code      string         `json:"code"`
	}
	status := get("/api/v2/merchant/leads/lookup?customer_id="+url.QueryEscape(customerID),
		map[string]string{"x-timestamp": ts, "x-leaddigest": hex.EncodeToString(mac.Sum(nil))}, &answer)
	if status != http.StatusOK {
		fmt.Fprintln(os.Stderr, "lookup refused:", status, answer.Code)
		os.Exit(1)
	}
	leadID, _ := answer.Lead["_id"].(string)
	fmt.Printf("path B: lookup %d, lead %s, token for %d s\n", status, leadID, answer.ExpiresIn)

	// The browser or app sends the lead token on every customer-scoped call.
	status = get("/api/v2/merchant/orders", map[string]string{"x-leadtoken": answer.LeadToken}, nil)
	fmt.Printf("path B: GET /api/v2/merchant/orders with the token: %d\n", status)

	// Path A: your server knows the lead's id: sign the token yourself (HS256, lead_id, iat, exp).
	now := time.Now()
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"lead_id": leadID, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}).SignedString([]byte(secret))
	if err != nil {
		fmt.Fprintln(os.Stderr, "signing failed:", err)
		os.Exit(1)
	}
	status = get("/api/v2/merchant/orders", map[string]string{"x-leadtoken": token}, nil)
	fmt.Printf("path A: GET /api/v2/merchant/orders with a token signed here: %d\n", status)
}
