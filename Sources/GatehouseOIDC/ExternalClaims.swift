import FoundationEssentials
import GatehouseEncoding

/// Aggregated and distributed claims in a UserInfo answer (OIDC Core §5.6.2): `_claim_names` maps
/// a claim to a source in `_claim_sources`, which is either a JWT (aggregated) or an endpoint to
/// fetch one from with the access token it names (distributed). Every such JWT is verified before
/// any claim is taken from it: with the provider's own keys when its `iss` is the provider (or
/// absent), else with the keys of the issuer it names, found by discovery over https. Only the
/// claims mapped to a source are taken from it, never a protocol claim, never over a claim the
/// provider asserted itself. A source that cannot be fetched or verified adds nothing; the login
/// goes on with the provider's own claims.
public struct ExternalClaims: Sendable {
    let http: any ProviderHTTPClient
    let providerIssuer: String
    let providerKeys: KeySet?
    /// Sources read per answer, and the largest JWT taken from one.
    static let maximumSources = 4
    static let maximumJWTBytes = 64 * 1024

    public init(http: any ProviderHTTPClient, providerIssuer: String, providerKeys: KeySet?) {
        self.http = http
        self.providerIssuer = providerIssuer
        self.providerKeys = providerKeys
    }

    /// `claims` with the external ones resolved, `_claim_names` and `_claim_sources` removed, and why
    /// each source that added nothing was left out (for the log; no token or value in it).
    public func resolved(_ claims: [String: JSONValue]) async -> (claims: [String: JSONValue], skipped: [String]) {
        var result = claims
        result["_claim_names"] = nil
        result["_claim_sources"] = nil
        guard let names = claims["_claim_names"]?.objectValue, let sources = claims["_claim_sources"]?.objectValue else {
            return (result, [])
        }
        var skipped: [String] = []
        for (sourceName, source) in sources.sorted(by: { $0.key < $1.key }).prefix(Self.maximumSources) {
            let wanted = names.filter { $0.value.stringValue == sourceName }.map(\.key)
            guard !wanted.isEmpty else { continue }
            let verified: [String: JSONValue]
            do { verified = try await self.verifiedClaims(of: source.objectValue ?? [:]) } catch {
                skipped.append("\(sourceName): \(error)")
                continue
            }
            for name in wanted where result[name] == nil && !UserInfoClaims.protocolClaims.contains(name) {
                if let value = verified[name] { result[name] = value }
            }
        }
        if sources.count > Self.maximumSources { skipped.append("sources beyond the first \(Self.maximumSources)") }
        return (result, skipped)
    }

    enum SourceError: Error, CustomStringConvertible {
        case malformed(String), fetch(String), verification(String)
        var description: String {
            switch self {
            case .malformed(let why): "malformed source: \(why)"
            case .fetch(let why): "distributed endpoint: \(why)"
            case .verification(let why): "not verified: \(why)"
            }
        }
    }

    private func verifiedClaims(of source: [String: JSONValue]) async throws(SourceError) -> [String: JSONValue] {
        let jwt: String
        if let aggregated = source["JWT"]?.stringValue {
            jwt = aggregated
        } else if let endpoint = source["endpoint"]?.stringValue {
            jwt = try await fetch(endpoint, accessToken: source["access_token"]?.stringValue)
        } else {
            throw .malformed("neither JWT nor endpoint")
        }
        guard jwt.utf8.count <= Self.maximumJWTBytes else { throw .malformed("a JWT above 64 KiB") }
        let keys = try await keySet(for: try unverifiedIssuer(jwt))
        do { return try await keys.verify(jwt, from: .providerResponse).claims } catch { throw .verification("\(error)") }
    }

    /// A distributed source: `GET` with the access token it names (RFC 6750 §2.1), https only (or
    /// loopback http), no redirect; the answer a JWT.
    private func fetch(_ endpoint: String, accessToken: String?) async throws(SourceError) -> String {
        guard Self.isAllowed(endpoint) else { throw .fetch("not an https URL") }
        var headers = [ProviderHTTPHeader("Accept", "application/jwt")]
        if let accessToken { headers.append(ProviderHTTPHeader("Authorization", "Bearer " + accessToken)) }
        let response: ProviderHTTPResponse
        do { response = try await http.send(ProviderHTTPRequest(method: .get, url: endpoint, headers: headers, operation: .userinfo)) } catch {
            throw .fetch("\(error)")
        }
        guard response.status == 200 else { throw .fetch("status \(response.status)") }
        guard response.body.count <= Self.maximumJWTBytes else { throw .fetch("an answer above 64 KiB") }
        return String(decoding: response.body, as: UTF8.self).trimmingWhitespaceAndNewlines()
    }

    /// The JWT's `iss` before verification, only to choose the keys that will verify it.
    private func unverifiedIssuer(_ jwt: String) throws(SourceError) -> String? {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]),
              let claims = try? JSONValue.parse(payload).objectValue else { throw .malformed("not a signed JWT") }
        return claims["iss"]?.stringValue
    }

    private func keySet(for issuer: String?) async throws(SourceError) -> KeySet {
        if issuer == nil || issuer == providerIssuer {
            guard let providerKeys else { throw .verification("no provider keys to verify with") }
            return providerKeys
        }
        guard let issuer, Self.isAllowed(issuer) else { throw .verification("its issuer is not an https URL") }
        let metadata: ProviderMetadata
        do { metadata = try await ProviderMetadata.discover(issuer: issuer, http: http) } catch {
            throw .verification("discovery of its issuer: \(error)")
        }
        return KeySet(metadata: metadata, http: http)
    }

    /// https, or http on a loopback host (as for the provider itself).
    public static func isAllowed(_ url: String) -> Bool {
        let lowered = url.lowercased()
        if lowered.hasPrefix("https://") { return true }
        guard lowered.hasPrefix("http://") else { return false }
        let authority = lowered.dropFirst(7).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.contains("@") else { return false }
        let host: Substring
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = authority[...close]
        } else {
            host = authority.prefix { $0 != ":" }
        }
        return LoopbackHost.contains(host)
    }
}
