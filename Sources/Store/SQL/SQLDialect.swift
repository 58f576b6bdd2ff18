/// Which SQL the database speaks, for the few statements that differ between the backends.
public enum SQLDialect: Sendable, Equatable {
    case sqlite
    case postgres
}
