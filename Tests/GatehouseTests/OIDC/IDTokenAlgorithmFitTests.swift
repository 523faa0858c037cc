@testable import GatehouseOIDC
import Testing

/// `gatehouse check` fails when every login would fail on the ID token's algorithm (a provider that
/// signs only ES256 while RS256 alone is accepted passed `check` and failed each callback).
@Suite("ID-token algorithms against what the provider signs with")
struct IDTokenAlgorithmFitTests {
    @Test("accepted algorithms outside the advertised list fail, naming the variable to set")
    func advertisedMismatch() throws {
        let problem = try #require(IDTokenAlgorithmFit.problem(accepted: [.rs256], advertised: ["ES256", "ES384"],
                                                                keyAlgorithms: [.es256]))
        #expect(problem.contains("GATEHOUSE_ID_TOKEN_ALGS=ES256,ES384"))
    }

    @Test("a provider that advertises only HMAC is told to sign asymmetrically")
    func onlyHMAC() throws {
        let problem = try #require(IDTokenAlgorithmFit.problem(accepted: [.rs256], advertised: ["HS512"], keyAlgorithms: nil))
        #expect(problem.contains("no asymmetric algorithm"))
    }

    @Test("keys that fit none of the accepted algorithms fail even when the list overlaps")
    func keysMismatch() throws {
        let problem = try #require(IDTokenAlgorithmFit.problem(accepted: [.rs256], advertised: ["RS256", "ES256"],
                                                                keyAlgorithms: [.es256]))
        #expect(problem.contains("jwks_uri") && problem.contains("GATEHOUSE_ID_TOKEN_ALGS=ES256"))
    }

    @Test("a fitting configuration passes")
    func fits() {
        let cases: [(Set<SigningAlgorithm>, [String]?, Set<SigningAlgorithm>?)] = [
            ([.rs256], ["RS256", "ES256"], [.rs256, .es256]),
            ([.rs256, .es256], ["ES256"], [.es256]),
            ([.rs256], nil, nil),
            ([.ps256], [], [.ps256, .rs256]),
        ]
        for (accepted, advertised, keys) in cases {
            #expect(IDTokenAlgorithmFit.problem(accepted: accepted, advertised: advertised, keyAlgorithms: keys) == nil)
        }
    }
}
