/// One statement of the session stores in each engine's dialect. Most are written once
/// (`init(_:)`): SQL that both engines run alike, with SQLite's numbered `?N` placeholders, which
/// PostgreSQL spells `$N`. The few that differ — where each engine locks and counts its own way —
/// give both texts side by side (`init(sqlite:postgres:)`), so that they are compared in one place.
/// The texts are fixed: SQLite prepares each once and caches it; PostgreSQL gets them unnamed
/// (`PQsendQueryParams`, never prepared by name: PgBouncer transaction mode).
struct SessionStatement: Sendable {
    let sqlite: String
    let postgres: String

    /// A statement both engines run as written, but for the placeholders: every `?N` becomes `$N`
    /// for PostgreSQL (no statement has a `?` anywhere else).
    init(_ portable: String) {
        let characters = Array(portable)
        let dollars = characters.indices.map { index in
            characters[index] == "?" && index + 1 < characters.count && characters[index + 1].isWholeNumber
                ? "$" : characters[index]
        }
        self.init(sqlite: portable, postgres: String(dollars))
    }

    init(sqlite: String, postgres: String) {
        self.sqlite = sqlite
        self.postgres = postgres
    }

    func text(in dialect: SessionDatabaseEngine) -> String {
        switch dialect {
        case .sqlite: sqlite
        case .postgres: postgres
        }
    }
}
