import GatehouseOIDC
import Testing

/// SPEC third round, Operations: only a refusal ends the session — `400` with `invalid_grant`,
/// `invalid_request`, `unauthorized_client` or `invalid_scope`; `invalid_client` keeps it (the
/// operator's error); unreachable or `5xx` keep it.
@Suite("Refresh failure: which refusals end the session")
struct RefreshFailureTests {
    private static func refused(_ code: String, status: Int = 400) -> TokenEndpointError {
        .oauth(code: OAuthErrorCode(code), description: nil, httpStatus: status)
    }

    @Test("a 400 with a session-ending code ends the session", arguments: ["invalid_grant", "invalid_request", "unauthorized_client", "invalid_scope"])
    func endingCodes(code: String) {
        let failure = RefreshFailure(Self.refused(code))
        #expect(failure == .grantRefused(OAuthErrorCode(code)))
        #expect(failure.endsSession)
    }

    @Test("invalid_client is the operator's error: the session stays")
    func invalidClient() {
        for status in [400, 401] {
            let failure = RefreshFailure(Self.refused("invalid_client", status: status))
            #expect(failure == .clientRefused)
            #expect(!failure.endsSession)
        }
    }

    @Test("other refusals, 5xx answers and no answer keep the session")
    func temporaryOrOther() {
        #expect(RefreshFailure(Self.refused("unsupported_grant_type")) == .otherRefusal(.unsupportedGrantType))
        #expect(RefreshFailure(Self.refused("invalid_grant", status: 500)) == .unavailable)
        #expect(RefreshFailure(Self.refused("server_error", status: 503)) == .unavailable)
        #expect(RefreshFailure(.unexpectedStatus(503)) == .unavailable)
        #expect(RefreshFailure(.transport(.timeout)) == .unavailable)
        #expect(RefreshFailure(.transport(.unreachable("refused"))) == .unavailable)
        #expect(RefreshFailure(.invalidResponse("not JSON")) == .unavailable)
        for failure in [RefreshFailure(.unexpectedStatus(503)), RefreshFailure(Self.refused("unsupported_grant_type"))] {
            #expect(!failure.endsSession)
        }
    }

    @Test("a grant for another API's resource or scope: invalid_request and invalid_scope may be about that target")
    func ownTarget() {
        #expect(RefreshFailure(Self.refused("invalid_grant"), carriesOwnTarget: true) == .grantRefused(.invalidGrant))
        #expect(RefreshFailure(Self.refused("unauthorized_client"), carriesOwnTarget: true) == .grantRefused(.unauthorizedClient))
        #expect(RefreshFailure(Self.refused("invalid_scope"), carriesOwnTarget: true) == .otherRefusal(.invalidScope))
        #expect(RefreshFailure(Self.refused("invalid_request"), carriesOwnTarget: true) == .otherRefusal(.invalidRequest))
        #expect(RefreshFailure(Self.refused("invalid_client"), carriesOwnTarget: true) == .clientRefused)
    }
}
