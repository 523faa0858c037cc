// Verify a Gatehouse identity assertion in a Go API (go-jose v2: gopkg.in/square/go-jose.v2).
//
// Run: GATEHOUSE_JWKS_URL=https://app.example.com/.well-known/jwks.json GATEHOUSE_URL=https://app.example.com \
//      API_AUDIENCE=orders-api go run main.go "$ASSERTION"
// In an API, take the assertion from the `Gatehouse-Assertion` request header and answer 401 when
// verify fails. Keep the key set and fetch it again when an assertion names a kid it lacks.
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	jose "gopkg.in/square/go-jose.v2"
	"gopkg.in/square/go-jose.v2/jwt"
)

type gatehouseClaims struct {
	jwt.Claims
	Email string `json:"email"`
	IDP   string `json:"idp"`
}

func env(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}

func loadKeys(url string) (*jose.JSONWebKeySet, error) {
	answer, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer answer.Body.Close()
	var keys jose.JSONWebKeySet
	return &keys, json.NewDecoder(answer.Body).Decode(&keys)
}

func verify(assertion string, keys *jose.JSONWebKeySet) (*gatehouseClaims, error) {
	token, err := jwt.ParseSigned(assertion)
	if err != nil {
		return nil, err
	}
	if len(token.Headers) != 1 || token.Headers[0].Algorithm != string(jose.ES256) {
		return nil, fmt.Errorf("not an ES256 assertion")
	}
	var claims gatehouseClaims
	if err := token.Claims(keys, &claims); err != nil { // signature, by the header's kid
		return nil, err
	}
	err = claims.ValidateWithLeeway(jwt.Expected{
		Issuer:   env("GATEHOUSE_URL", "https://app.example.com"), // GATEHOUSE_PUBLIC_URL
		Audience: jwt.Audience{env("API_AUDIENCE", "orders-api")},  // the route's audience=
		Time:     time.Now(),
	}, 5*time.Second)
	return &claims, err
}

func main() {
	keys, err := loadKeys(env("GATEHOUSE_JWKS_URL", "https://app.example.com/.well-known/jwks.json"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	claims, err := verify(os.Args[1], keys)
	if err != nil || claims.Subject == "" || claims.Expiry == nil {
		fmt.Fprintln(os.Stderr, "assertion refused:", err)
		os.Exit(1)
	}
	fmt.Println(claims.Subject, claims.Email, claims.IDP)
}
