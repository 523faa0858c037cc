extension EnvironmentReader {
    /// Route option combinations that would quietly weaken a route's policy, refused at start
    /// (exit 64, naming the route) rather than served.
    mutating func refuseWeakeningRouteCombinations(routes: [UpstreamRoute], securityProfile: SecurityProfile?) {
        for route in routes {
            let name = ConfigurationIssue.quote(route.prefix)
            guard case .client(_, let sessionRequired) = route.auth else { continue }
            // The gateway's client-credentials token goes upstream as a plain bearer: FAPI 2.0
            // (§5.3.3.1) wants every access token sender-constrained, and the gateway has no DPoP
            // key of its own for it.
            if securityProfile == .fapi2 {
                fail("GATEHOUSE_ROUTES", "route \(name) uses auth=client, whose client-credentials token would go upstream "
                     + "as an unbound bearer, which GATEHOUSE_SECURITY_PROFILE=fapi2 forbids")
            }
            // Without a session the caller gets the gateway's client token anyway: dropping the
            // cookie would lift the provider restriction.
            if !sessionRequired, route.providers != nil {
                fail("GATEHOUSE_ROUTES", "route \(name) combines providers= with auth=client;session=optional: a caller "
                     + "without a session would pass; drop session=optional or providers=")
            }
        }
    }
}
