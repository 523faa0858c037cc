import Testing
@testable import GatehouseCore

@Suite("Step-up per route (`acr=`, `max_age=`; SPEC \"Sessions the SPA controls\")")
struct StepUpPolicyTests {
    @Test("The route options parse, round-trip, and are refused where no session is")
    func options() throws {
        let route = try UpstreamRoute(prefix: "/r", upstream: "http://api:9000;acr=urn:gold|urn:platinum;max_age=300")
        #expect(route.stepUp == StepUpPolicy(acrValues: ["urn:gold", "urn:platinum"], maxAge: 300))
        #expect(route.readsSession)
        #expect(route.description == "/r=http://api:9000;acr=urn:gold|urn:platinum;max_age=300")
        #expect(try UpstreamRoute(prefix: "/r", upstream: "http://api:9000").readsSession == false)
        for (options, words) in [("acr=a b", "acr values"), ("acr=a||b", "acr values"), ("max_age=-1", "0 to 315360000"),
                                 ("max_age=x", "0 to 315360000"), ("auth=none;acr=a", "auth=none"),
                                 ("auth=client;max_age=1", "auth=client"), ("acr=a;acr=b", "more than once")] {
            do {
                _ = try UpstreamRoute(prefix: "/r", upstream: "http://api:9000;" + options)
                Issue.record("\(options) accepted")
            } catch {
                #expect("\(error)".contains(words), "\(options): \(error)")
            }
        }
    }

    @Test("acr must be listed and auth_time recent; a missing claim satisfies nothing asked of it")
    func satisfaction() {
        let gold = StepUpPolicy(acrValues: ["gold"], maxAge: nil)
        #expect(gold.isSatisfied(acr: "gold", authTime: nil, now: 100))
        #expect(!gold.isSatisfied(acr: "silver", authTime: nil, now: 100))
        #expect(!gold.isSatisfied(acr: nil, authTime: 100, now: 100))
        let fresh = StepUpPolicy(maxAge: 60)
        #expect(fresh.isSatisfied(acr: nil, authTime: 40, now: 100))
        #expect(fresh.isSatisfied(acr: "any", authTime: 40, now: 100))
        // Up to the clock skew past max_age is still recent enough; more is not.
        #expect(fresh.isSatisfied(acr: nil, authTime: 35, now: 100))
        #expect(!fresh.isSatisfied(acr: nil, authTime: 34, now: 100))
        #expect(!fresh.isSatisfied(acr: nil, authTime: nil, now: 100))
        #expect(StepUpPolicy().isSatisfied(acr: nil, authTime: nil, now: 0))
    }

    @Test("One rule for the callback and the route: an auth_time within the clock skew of max_age passes both")
    func oneRuleWithSkew() {
        // A step-up login with max_age=0 whose provider clock runs 3 s behind ours: the callback
        // accepts it, so the route that asked for it must not refuse it at once.
        let now: Int64 = 1_000
        let forced = StepUpPolicy(maxAge: 0)
        #expect(forced.shortfall(acr: nil, authTime: now - 3, now: now) == nil)
        #expect(forced.shortfall(acr: nil, authTime: now - StepUpPolicy.authTimeSkew, now: now) == nil)
        #expect(forced.shortfall(acr: nil, authTime: now - StepUpPolicy.authTimeSkew - 1, now: now) == .authTimeTooOld)
        // A future auth_time (a provider clock ahead of ours) is not too old either.
        #expect(forced.shortfall(acr: nil, authTime: now + 3, now: now) == nil)
    }

    @Test("A shortfall names the claim that failed")
    func shortfallNamesTheClaim() {
        let policy = StepUpPolicy(acrValues: ["gold"], maxAge: 60)
        #expect(policy.shortfall(acr: nil, authTime: 100, now: 100) == .acrMissing)
        #expect(policy.shortfall(acr: "silver", authTime: 100, now: 100) == .acrNotRequested)
        #expect(policy.shortfall(acr: "gold", authTime: nil, now: 100) == .authTimeMissing)
        #expect(policy.shortfall(acr: "gold", authTime: 0, now: 100) == .authTimeTooOld)
        #expect(policy.shortfall(acr: "gold", authTime: 90, now: 100) == nil)
        for (shortfall, claim) in [(StepUpPolicy.Shortfall.acrMissing, "acr"), (.acrNotRequested, "acr"),
                                   (.authTimeMissing, "auth_time"), (.authTimeTooOld, "auth_time")] {
            #expect("\(shortfall)".hasPrefix(claim + " "))
        }
    }

    @Test("The login link and the authorization parameters say what the route needs")
    func login() throws {
        let policy = StepUpPolicy(acrValues: ["urn:gold", "2fa"], maxAge: 60)
        #expect(policy.loginPath == "/login?acr_values=urn%3Agold%202fa&max_age=60")
        #expect(policy.authorizationParameters.map { "\($0.0)=\($0.1)" } == ["acr_values=urn:gold 2fa", "max_age=60"])
        #expect(StepUpPolicy(maxAge: 0).loginPath == "/login?max_age=0")
        #expect(try StepUpPolicy.requested(acrValues: ["urn:gold 2fa"], maxAge: ["60"]) == policy)
        #expect(try StepUpPolicy.requested(acrValues: [], maxAge: []) == nil)
        let refused: [([String?], [String?])] = [([nil], []), ([""], []), (["a"], ["-1"]), (["a"], ["1", "2"]),
                                                 (["a", "b"], []), (["a\u{1}"], []), ([], ["x"]), ([], [nil])]
        for (acr, age) in refused {
            #expect(throws: StepUpPolicy.InvalidLoginRequest.self, "\(acr) \(age)") {
                _ = try StepUpPolicy.requested(acrValues: acr, maxAge: age)
            }
        }
    }
}
