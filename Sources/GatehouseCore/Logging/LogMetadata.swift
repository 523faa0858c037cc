import Logging

/// Flattening of swift-log metadata into dotted keys: `["http": ["status": 200]]` becomes
/// `http.status=200`. Arrays stay lists.
enum LogMetadata {
    enum Flat: Equatable {
        case string(String)
        case array([Flat])
        case object([(String, Flat)])

        static func == (a: Flat, b: Flat) -> Bool {
            switch (a, b) {
            case let (.string(x), .string(y)): x == y
            case let (.array(x), .array(y)): x == y
            case let (.object(x), .object(y)): x.map(\.0) == y.map(\.0) && x.map(\.1) == y.map(\.1)
            default: false
            }
        }
    }

    /// Sorted by key, so lines are stable.
    static func flatten(_ metadata: Logger.Metadata) -> [(String, Flat)] {
        var out: [(String, Flat)] = []
        for key in metadata.keys.sorted() {
            guard let value = metadata[key] else { continue }
            flatten(value, key: key, into: &out)
        }
        return out
    }

    private static func flatten(_ value: Logger.MetadataValue, key: String, into out: inout [(String, Flat)]) {
        switch value {
        case .string(let s): out.append((key, .string(s)))
        case .stringConvertible(let c): out.append((key, .string(c.description)))
        case .array(let items): out.append((key, .array(items.map(nested))))
        case .dictionary(let dict):
            for sub in dict.keys.sorted() {
                guard let v = dict[sub] else { continue }
                flatten(v, key: "\(key).\(sub)", into: &out)
            }
        }
    }

    private static func nested(_ value: Logger.MetadataValue) -> Flat {
        switch value {
        case .string(let s): .string(s)
        case .stringConvertible(let c): .string(c.description)
        case .array(let items): .array(items.map(nested))
        case .dictionary(let dict): .object(dict.keys.sorted().compactMap { k in dict[k].map { (k, nested($0)) } })
        }
    }

    /// Handler metadata, then the provider's, then the call's, later ones winning.
    static func merge(handler: Logger.Metadata, provider: Logger.MetadataProvider?, event: Logger.Metadata?) -> Logger.Metadata {
        var merged = handler
        if let provided = provider?.get() { merged.merge(provided) { _, new in new } }
        if let event { merged.merge(event) { _, new in new } }
        return merged
    }
}
