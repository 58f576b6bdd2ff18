import Store

/// The entitlement tables, as versioned migrations. Never edit a released migration: add one.
/// Times are milliseconds since 1970 (BIGINT), booleans are 0/1, so one SQL text serves both backends.
enum EntitlementSchema {
    static let migrations: [Migration] = [
        Migration(version: 1, name: "entitlements") { dialect in
            let serial = dialect == .postgres ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"
            return """
            CREATE TABLE purchases (
                source TEXT NOT NULL, app TEXT NOT NULL, subject TEXT NOT NULL,
                kind TEXT NOT NULL, state TEXT NOT NULL, user_id TEXT, product TEXT, environment TEXT NOT NULL,
                expires_at_ms BIGINT, grace_expires_at_ms BIGINT, auto_renew INTEGER, superseded_by TEXT,
                last_event_at_ms BIGINT NOT NULL, last_event_id TEXT NOT NULL, last_event_type TEXT NOT NULL,
                updated_at_ms BIGINT NOT NULL,
                PRIMARY KEY (source, app, subject));
            CREATE INDEX purchases_by_user ON purchases (app, user_id, product);
            CREATE TABLE entitlements (
                app TEXT NOT NULL, user_id TEXT NOT NULL, product TEXT NOT NULL,
                source TEXT NOT NULL, subject TEXT NOT NULL, state TEXT NOT NULL,
                expires_at_ms BIGINT, grace_expires_at_ms BIGINT, updated_at_ms BIGINT NOT NULL,
                PRIMARY KEY (app, user_id, product));
            CREATE TABLE processed_events (event_id TEXT PRIMARY KEY, processed_at_ms BIGINT NOT NULL);
            CREATE TABLE entitlement_outbox (
                sequence \(serial),
                app TEXT NOT NULL, user_id TEXT NOT NULL, product TEXT NOT NULL,
                source TEXT NOT NULL, subject TEXT NOT NULL, state TEXT NOT NULL, active INTEGER NOT NULL,
                expires_at_ms BIGINT, grace_expires_at_ms BIGINT, changed_at_ms BIGINT NOT NULL, event_id TEXT NOT NULL);
            CREATE TABLE leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at_ms BIGINT NOT NULL);
            CREATE TABLE dlq_replays (
                dlt_partition INTEGER NOT NULL, dlt_offset BIGINT NOT NULL, event_id TEXT,
                replays INTEGER NOT NULL, last_replayed_at_ms BIGINT NOT NULL,
                PRIMARY KEY (dlt_partition, dlt_offset));
            """
        },
    ]
}
