// Verify a Gatehouse identity assertion in a Node API (jose: `npm install jose`).
//
// Run: GATEHOUSE_JWKS_URL=https://app.example.com/.well-known/jwks.json GATEHOUSE_URL=https://app.example.com \
//      API_AUDIENCE=orders-api node verify.mjs "$ASSERTION"
// In an API, take the assertion from the `Gatehouse-Assertion` request header and answer 401 when
// `verify` throws. `createRemoteJWKSet` caches the keys and fetches them again for an unknown kid.
import { createRemoteJWKSet, jwtVerify } from 'jose';

const keys = createRemoteJWKSet(new URL(process.env.GATEHOUSE_JWKS_URL ?? 'https://app.example.com/.well-known/jwks.json'));

export async function verify(assertion) {
  const { payload } = await jwtVerify(assertion, keys, {
    algorithms: ['ES256'],
    issuer: process.env.GATEHOUSE_URL ?? 'https://app.example.com', // GATEHOUSE_PUBLIC_URL
    audience: process.env.API_AUDIENCE ?? 'orders-api', // the route's audience=, else the upstream's origin
    requiredClaims: ['sub', 'exp'],
  });
  return payload;
}

const claims = await verify(process.argv[2]);
console.log(claims.sub, claims.email ?? '', claims.idp);
