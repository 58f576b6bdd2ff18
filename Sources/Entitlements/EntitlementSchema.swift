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
        // The environment joins the purchase's and the entitlement's identity, so a sandbox
        // purchase can neither change a production one nor decide a production entitlement. Purchases
        // already recorded theirs. An existing entitlement (and a change still in the outbox) takes the
        // environment of the purchase that decided it: production unless that purchase was a sandbox one.
        Migration(version: 2, name: "environment in purchase and entitlement keys") { dialect in
            let deciderEnvironment = { (table: String) in
                """
                UPDATE \(table) SET environment = COALESCE((SELECT p.environment FROM purchases p
                    WHERE p.source = \(table).source AND p.app = \(table).app AND p.subject = \(table).subject), 'production')
                """
            }
            switch dialect {
            case .postgres:
                return """
                ALTER TABLE purchases DROP CONSTRAINT purchases_pkey;
                ALTER TABLE purchases ADD PRIMARY KEY (source, app, environment, subject);
                DROP INDEX purchases_by_user;
                CREATE INDEX purchases_by_user ON purchases (app, environment, user_id, product);
                ALTER TABLE entitlements ADD COLUMN environment TEXT NOT NULL DEFAULT 'production';
                \(deciderEnvironment("entitlements"));
                ALTER TABLE entitlements DROP CONSTRAINT entitlements_pkey;
                ALTER TABLE entitlements ADD PRIMARY KEY (app, environment, user_id, product);
                ALTER TABLE entitlement_outbox ADD COLUMN environment TEXT NOT NULL DEFAULT 'production';
                \(deciderEnvironment("entitlement_outbox"));
                """
            case .sqlite:
                // SQLite cannot change a primary key: the two tables are rebuilt.
                return """
                CREATE TABLE purchases_v2 (
                    source TEXT NOT NULL, app TEXT NOT NULL, subject TEXT NOT NULL,
                    kind TEXT NOT NULL, state TEXT NOT NULL, user_id TEXT, product TEXT, environment TEXT NOT NULL,
                    expires_at_ms BIGINT, grace_expires_at_ms BIGINT, auto_renew INTEGER, superseded_by TEXT,
                    last_event_at_ms BIGINT NOT NULL, last_event_id TEXT NOT NULL, last_event_type TEXT NOT NULL,
                    updated_at_ms BIGINT NOT NULL,
                    PRIMARY KEY (source, app, environment, subject));
                INSERT INTO purchases_v2 SELECT * FROM purchases;
                DROP TABLE purchases;
                ALTER TABLE purchases_v2 RENAME TO purchases;
                CREATE INDEX purchases_by_user ON purchases (app, environment, user_id, product);
                CREATE TABLE entitlements_v2 (
                    app TEXT NOT NULL, environment TEXT NOT NULL, user_id TEXT NOT NULL, product TEXT NOT NULL,
                    source TEXT NOT NULL, subject TEXT NOT NULL, state TEXT NOT NULL,
                    expires_at_ms BIGINT, grace_expires_at_ms BIGINT, updated_at_ms BIGINT NOT NULL,
                    PRIMARY KEY (app, environment, user_id, product));
                INSERT INTO entitlements_v2 (app, environment, user_id, product, source, subject, state, expires_at_ms,
                                             grace_expires_at_ms, updated_at_ms)
                    SELECT app, 'production', user_id, product, source, subject, state, expires_at_ms, grace_expires_at_ms,
                           updated_at_ms FROM entitlements;
                DROP TABLE entitlements;
                ALTER TABLE entitlements_v2 RENAME TO entitlements;
                \(deciderEnvironment("entitlements"));
                ALTER TABLE entitlement_outbox ADD COLUMN environment TEXT NOT NULL DEFAULT 'production';
                \(deciderEnvironment("entitlement_outbox"));
                """
            }
        },
        // Whether each entitlement's last queued change was active, and until when it
        // entitles when nothing else happens, so the expiry sweeper finds those whose time ran out without
        // a notification. An existing active entitlement counts as published active: one whose end has
        // already passed is published inactive once by the first sweep.
        Migration(version: 3, name: "entitlement active flag for the expiry sweeper") { _ in
            """
            ALTER TABLE entitlements ADD COLUMN active INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE entitlements ADD COLUMN active_until_ms BIGINT;
            UPDATE entitlements SET active = 1,
                active_until_ms = CASE WHEN state = 'grace_period' THEN COALESCE(grace_expires_at_ms, expires_at_ms)
                                       ELSE expires_at_ms END
                WHERE state IN ('active', 'grace_period');
            CREATE INDEX entitlements_active_until ON entitlements (active_until_ms);
            """
        },
        // Where each reconciliation job (a store's history read back page by
        // page) stands, per job and scope (an app and environment, a package), so a run resumes where
        // the last one stopped (ReconcileCheckpoint.swift).
        Migration(version: 4, name: "reconciliation checkpoints") { _ in
            """
            CREATE TABLE reconcile_checkpoints (
                job TEXT NOT NULL, scope TEXT NOT NULL,
                done_through_ms BIGINT,
                window_start_ms BIGINT, window_end_ms BIGINT, page_token TEXT,
                updated_at_ms BIGINT NOT NULL,
                PRIMARY KEY (job, scope));
            """
        },
        // A verified Google purchase whose acknowledgement Google did not
        // take at once waits here for the workers' retry loop until it is taken or its three days pass
        // (PlayAcknowledgementRows.swift). One row per purchase and product.
        Migration(version: 5, name: "play acknowledgements awaiting retry") { _ in
            """
            CREATE TABLE play_acknowledgements (
                package_name TEXT NOT NULL, kind TEXT NOT NULL, product_id TEXT NOT NULL, purchase_token TEXT NOT NULL,
                deadline_ms BIGINT NOT NULL, attempts INTEGER NOT NULL, next_attempt_at_ms BIGINT NOT NULL,
                queued_at_ms BIGINT NOT NULL, last_error TEXT,
                PRIMARY KEY (package_name, kind, product_id, purchase_token));
            CREATE INDEX play_acknowledgements_due ON play_acknowledgements (next_attempt_at_ms);
            """
        },
        // Checkouts, a user's intent to pay for a product through Alipay+ / Antom or
        // Citcon, matched to the provider's notification by (provider, account, reference)
        // (Sources/Merchant/Checkouts/CheckoutRecords.swift).
        Migration(version: 6, name: "checkouts") { _ in
            """
            CREATE TABLE checkouts (
                id TEXT PRIMARY KEY, app TEXT NOT NULL, user_id TEXT NOT NULL, product TEXT NOT NULL,
                amount_minor BIGINT NOT NULL, currency TEXT NOT NULL, provider TEXT NOT NULL, account TEXT NOT NULL,
                reference TEXT NOT NULL, environment TEXT NOT NULL, state TEXT NOT NULL, quarantine_reason TEXT,
                payment_url TEXT, notify_url TEXT, created_at_ms BIGINT NOT NULL, expires_at_ms BIGINT NOT NULL,
                paid_event_id TEXT, updated_at_ms BIGINT NOT NULL);
            CREATE UNIQUE INDEX checkouts_by_reference ON checkouts (provider, account, reference);
            CREATE INDEX checkouts_pending ON checkouts (state, expires_at_ms);
            CREATE INDEX checkouts_by_user ON checkouts (app, environment, user_id, product);
            """
        },
        // The Sileo Payment Provider API's credentials (Sources/Merchant/Sileo). Every
        // secret is kept only as its SHA-256 (hex); `vendor` is the vendor's base path.
        Migration(version: 7, name: "sileo sign-in nonces, tokens and download keys") { _ in
            """
            CREATE TABLE sileo_nonces (
                nonce_hash TEXT PRIMARY KEY, vendor TEXT NOT NULL, browser_hash TEXT NOT NULL, expires_at_ms BIGINT NOT NULL);
            CREATE TABLE sileo_tokens (
                token_hash TEXT PRIMARY KEY, vendor TEXT NOT NULL, user_id TEXT NOT NULL, name TEXT, email TEXT,
                payment_secret_hash TEXT NOT NULL, created_at_ms BIGINT NOT NULL, expires_at_ms BIGINT NOT NULL);
            CREATE TABLE sileo_download_keys (
                key_hash TEXT PRIMARY KEY, vendor TEXT NOT NULL, user_id TEXT NOT NULL, package TEXT NOT NULL,
                expires_at_ms BIGINT NOT NULL);
            """
        },
        // Antom's refund notification names the merchant's refundRequestId and
        // not the payment, so a checkout keeps the paymentId its payment notification carried (what a
        // refund call names) and the refundRequestId Tollgate sent (what the notification comes back with).
        Migration(version: 8, name: "checkout payment ids and refund requests") { _ in
            """
            ALTER TABLE checkouts ADD COLUMN payment_id TEXT;
            ALTER TABLE checkouts ADD COLUMN refund_request_id TEXT;
            CREATE UNIQUE INDEX checkouts_by_refund_request ON checkouts (provider, account, refund_request_id);
            """
        },
        // Keys the workers derive things with (the opaque purchase ids), made once and shared by every replica.
        Migration(version: 9, name: "server keys") { _ in
            "CREATE TABLE server_keys (name TEXT PRIMARY KEY, secret TEXT NOT NULL);"
        },
        // A purchase that moves between users: each side's change names the other user.
        Migration(version: 10, name: "transfers in the outbox") { _ in
            """
            ALTER TABLE entitlement_outbox ADD COLUMN transferred_from TEXT;
            ALTER TABLE entitlement_outbox ADD COLUMN transferred_to TEXT;
            """
        },
        // A payment that does not match its checkout (amount, currency, environment, no signed amount) is
        // quarantined itself, one row per notification, and the checkout stays as it was: quarantining the
        // checkout let whoever knew its reference lock it with a wrong payment, so the owner's right one
        // paid nothing. Checkouts quarantined before become pending again (the sweeper expires those past
        // their time), their reason kept here; `quarantine_reason` is no longer written.
        Migration(version: 11, name: "quarantined checkout payments") { dialect in
            let code = dialect == .postgres ? "split_part(quarantine_reason, ':', 1)" : "substr(quarantine_reason, 1, instr(quarantine_reason, ':') - 1)"
            return """
            CREATE TABLE checkout_quarantined_payments (
                event_id TEXT PRIMARY KEY, checkout_id TEXT NOT NULL, app TEXT NOT NULL, user_id TEXT NOT NULL, product TEXT NOT NULL,
                provider TEXT NOT NULL, account TEXT NOT NULL, reference TEXT NOT NULL, reason TEXT NOT NULL, detail TEXT NOT NULL,
                payment_id TEXT, quarantined_at_ms BIGINT NOT NULL);
            CREATE INDEX checkout_quarantined_payments_by_checkout ON checkout_quarantined_payments (checkout_id);
            INSERT INTO checkout_quarantined_payments
                (event_id, checkout_id, app, user_id, product, provider, account, reference, reason, detail, quarantined_at_ms)
            SELECT 'migration-11:' || id, id, app, user_id, product, provider, account, reference,
                   CASE WHEN quarantine_reason LIKE '%:%' THEN \(code) ELSE 'unknown' END,
                   COALESCE(quarantine_reason, 'quarantined before migration 11'), updated_at_ms
            FROM checkouts WHERE state = 'quarantined';
            UPDATE checkouts SET state = 'pending', quarantine_reason = NULL WHERE state = 'quarantined';
            """
        },
        // Apple consumption requests the projection queued with their event, waiting for the workers'
        // job to answer them (Sources/Merchant/Consumption/ConsumptionAnswerRows.swift). One row per request.
        Migration(version: 12, name: "consumption answers awaiting the App Store") { _ in
            """
            CREATE TABLE consumption_answers (
                event_id TEXT PRIMARY KEY, app TEXT NOT NULL, environment TEXT NOT NULL, subject TEXT NOT NULL,
                transaction_id TEXT NOT NULL, requested_at_ms BIGINT NOT NULL, purchased_at_ms BIGINT, expires_at_ms BIGINT,
                attempts INTEGER NOT NULL, next_attempt_at_ms BIGINT NOT NULL, queued_at_ms BIGINT NOT NULL, last_error TEXT);
            CREATE INDEX consumption_answers_due ON consumption_answers (next_attempt_at_ms);
            """
        },
        // A user's checkouts, newest first (`GET /v1/checkouts`), whatever their environment and product.
        Migration(version: 13, name: "checkouts by user, newest first") { _ in
            "CREATE INDEX checkouts_by_user_created ON checkouts (app, user_id, created_at_ms);"
        },
        // Outbound webhooks (Sources/Webhooks): each event the projection applied to an entitlement, with
        // the entitlement after it, written in the projection's transaction; one delivery per endpoint
        // whose filters take it, in the order of its lane (the entitlement key); every attempt; each
        // endpoint's state.
        Migration(version: 14, name: "outbound webhooks") { dialect in
            let serial = dialect == .postgres ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"
            return """
            CREATE TABLE webhook_messages (
                sequence \(serial), message_id TEXT NOT NULL UNIQUE, lane TEXT NOT NULL,
                app TEXT NOT NULL, environment TEXT NOT NULL, user_id TEXT NOT NULL, product TEXT NOT NULL,
                event_id TEXT NOT NULL, event_type TEXT NOT NULL, event_json TEXT NOT NULL,
                source TEXT NOT NULL, subject TEXT NOT NULL, state TEXT NOT NULL, active INTEGER NOT NULL,
                expires_at_ms BIGINT, grace_expires_at_ms BIGINT, transferred_from TEXT, transferred_to TEXT,
                created_at_ms BIGINT NOT NULL);
            CREATE INDEX webhook_messages_by_lane ON webhook_messages (lane, sequence);
            CREATE INDEX webhook_messages_by_time ON webhook_messages (created_at_ms);
            CREATE TABLE webhook_deliveries (
                endpoint TEXT NOT NULL, message_sequence BIGINT NOT NULL, lane TEXT NOT NULL, status TEXT NOT NULL,
                attempts INTEGER NOT NULL, next_attempt_at_ms BIGINT NOT NULL, claimed_until_ms BIGINT NOT NULL, claim_token TEXT,
                created_at_ms BIGINT NOT NULL, updated_at_ms BIGINT NOT NULL,
                PRIMARY KEY (endpoint, message_sequence));
            CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at_ms);
            CREATE INDEX webhook_deliveries_by_lane ON webhook_deliveries (endpoint, lane, message_sequence);
            CREATE INDEX webhook_deliveries_done ON webhook_deliveries (status, updated_at_ms);
            CREATE INDEX webhook_deliveries_by_message ON webhook_deliveries (message_sequence);
            CREATE TABLE webhook_attempts (
                id \(serial), endpoint TEXT NOT NULL, message_sequence BIGINT NOT NULL, attempt INTEGER NOT NULL,
                attempted_at_ms BIGINT NOT NULL, outcome TEXT NOT NULL, status_code INTEGER, latency_ms BIGINT NOT NULL,
                excerpt TEXT NOT NULL);
            CREATE INDEX webhook_attempts_by_endpoint ON webhook_attempts (endpoint, attempted_at_ms);
            CREATE INDEX webhook_attempts_by_message ON webhook_attempts (endpoint, message_sequence);
            CREATE TABLE webhook_endpoints (
                endpoint TEXT PRIMARY KEY, disabled INTEGER NOT NULL, disabled_reason TEXT, failing_since_ms BIGINT,
                updated_at_ms BIGINT NOT NULL);
            """
        },
        // Forward webhook endpoints: a message may be a sender's verified request as it arrived (its body
        // and the headers kept with it), and each forward endpoint remembers since when it forwards. A
        // claim reads one endpoint's due deliveries in the order it takes them, from an index in that
        // order, and stops at its limit: no sort of everything waiting.
        Migration(version: 15, name: "forwarded webhooks") { dialect in
            """
            ALTER TABLE webhook_messages ADD COLUMN kind TEXT NOT NULL DEFAULT 'events';
            ALTER TABLE webhook_messages ADD COLUMN body \(dialect == .postgres ? "BYTEA" : "BLOB");
            ALTER TABLE webhook_messages ADD COLUMN forward_headers TEXT;
            ALTER TABLE webhook_endpoints ADD COLUMN forwarding_since_ms BIGINT;
            DROP INDEX webhook_deliveries_due;
            CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint, status, next_attempt_at_ms, message_sequence);
            """
        },
        // How many units of a purchase remain (Apple's quantity, less a prorated refund's share), on the
        // purchase, its entitlement, the entitlement's changes and the webhook messages that carry them;
        // and Apple's appTransactionId on the purchase.
        Migration(version: 16, name: "purchase quantity") { _ in
            """
            ALTER TABLE purchases ADD COLUMN quantity INTEGER;
            ALTER TABLE purchases ADD COLUMN app_transaction_id TEXT;
            ALTER TABLE entitlements ADD COLUMN quantity INTEGER;
            ALTER TABLE entitlement_outbox ADD COLUMN quantity INTEGER;
            ALTER TABLE webhook_messages ADD COLUMN quantity INTEGER;
            """
        },
        // Each purchase's opaque id beside it (a route names a purchase by it: `POST /v1/purchases/{purchase}/refresh`;
        // filled by every write, and at open for older rows), the purchases at risk found by state and
        // end, and when the at-risk refresh last read each from its store.
        Migration(version: 17, name: "purchase ids and refreshes") { _ in
            """
            ALTER TABLE purchases ADD COLUMN purchase_id TEXT;
            CREATE UNIQUE INDEX purchases_by_id ON purchases (purchase_id);
            CREATE INDEX purchases_by_state ON purchases (state, expires_at_ms);
            CREATE TABLE purchase_refreshes (
                source TEXT NOT NULL, app TEXT NOT NULL, environment TEXT NOT NULL, subject TEXT NOT NULL,
                read_at_ms BIGINT NOT NULL, outcome TEXT NOT NULL,
                PRIMARY KEY (source, app, environment, subject));
            """
        },
        // Google's chargeback reviews the projection queued with their event, waiting for the workers' job
        // to answer them (Sources/Merchant/Consumption/RefundReviewRows.swift). One row per review.
        Migration(version: 18, name: "refund reviews awaiting Google") { _ in
            """
            CREATE TABLE refund_reviews (
                event_id TEXT PRIMARY KEY, app TEXT NOT NULL, environment TEXT NOT NULL, order_id TEXT NOT NULL,
                pending_refund_token TEXT NOT NULL, requested_at_ms BIGINT NOT NULL, deadline_ms BIGINT NOT NULL,
                attempts INTEGER NOT NULL, next_attempt_at_ms BIGINT NOT NULL, queued_at_ms BIGINT NOT NULL, last_error TEXT);
            CREATE INDEX refund_reviews_due ON refund_reviews (next_attempt_at_ms);
            """
        },
        // App account tokens Tollgate made and set at Apple (Set App Account Token), each with the user it
        // stands for, so an Apple notification naming one gives the purchase to that user; and each purchase's
        // call, kept once made (`outcome`) so the same token is not set twice.
        Migration(version: 19, name: "app account tokens") { _ in
            """
            CREATE TABLE app_account_tokens (
                app TEXT NOT NULL, token TEXT NOT NULL, user_id TEXT NOT NULL, created_at_ms BIGINT NOT NULL,
                PRIMARY KEY (app, token));
            CREATE TABLE app_account_token_requests (
                app TEXT NOT NULL, environment TEXT NOT NULL, original_transaction_id TEXT NOT NULL, token TEXT NOT NULL,
                user_id TEXT NOT NULL, attempts INTEGER NOT NULL, next_attempt_at_ms BIGINT NOT NULL, queued_at_ms BIGINT NOT NULL, last_error TEXT,
                outcome TEXT, PRIMARY KEY (app, environment, original_transaction_id));
            CREATE INDEX app_account_token_requests_due ON app_account_token_requests (next_attempt_at_ms);
            """
        },
        // Each purchase's history for the operator console (PurchaseHistoryRows.swift): the events that
        // touched it, in the order applied, with what each did; pruned after `console.historyDays`. Users
        // are searched across apps (the console's search), so they get an index of their own. And what
        // operators did in the console (ConsoleAuditRows.swift).
        Migration(version: 20, name: "purchase history") { dialect in
            let serial = dialect == .postgres ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"
            return """
            CREATE TABLE purchase_history (
                sequence \(serial),
                purchase_id TEXT NOT NULL, event_id TEXT NOT NULL, type TEXT NOT NULL, source TEXT NOT NULL, app TEXT NOT NULL,
                environment TEXT NOT NULL, user_id TEXT, transaction_id TEXT, occurred_at TEXT NOT NULL, received_at TEXT NOT NULL,
                outcome TEXT NOT NULL, state_after TEXT, record_topic TEXT, record_partition INTEGER, record_offset BIGINT,
                event_json TEXT NOT NULL, entitlements_json TEXT NOT NULL, recorded_at_ms BIGINT NOT NULL);
            CREATE UNIQUE INDEX purchase_history_by_purchase ON purchase_history (purchase_id, event_id);
            CREATE INDEX purchase_history_by_transaction ON purchase_history (transaction_id);
            CREATE INDEX purchase_history_by_time ON purchase_history (recorded_at_ms);
            CREATE INDEX purchases_by_user_id ON purchases (user_id);
            CREATE INDEX purchases_by_subject ON purchases (subject);
            CREATE INDEX webhook_messages_by_event ON webhook_messages (event_id);
            CREATE TABLE console_audit (
                sequence \(serial),
                at_ms BIGINT NOT NULL, operator TEXT NOT NULL, action TEXT NOT NULL, target TEXT NOT NULL,
                outcome TEXT NOT NULL, detail TEXT NOT NULL);
            CREATE INDEX console_audit_by_time ON console_audit (at_ms);
            """
        },
        // The raw deliveries behind each event, by the position of their raw record, so a purchase's story
        // shows every delivery that carried its events (Sources/Entitlements/RawDeliveryRows.swift); kept,
        // as the history, for `console.historyDays`. One row per event a delivery carried. The history by event:
        // where a delivery's events went. The calls made to the stores' APIs for each purchase (acknowledgements,
        // consumption answers, refreshes), by the purchase's sender, app and subject (Sources/Entitlements/StoreCallRows.swift).
        Migration(version: 21, name: "raw deliveries by event, store calls by purchase") { _ in
            """
            CREATE TABLE raw_deliveries (
                event_id TEXT NOT NULL, source TEXT NOT NULL, record_topic TEXT NOT NULL, record_partition INTEGER NOT NULL,
                record_offset BIGINT NOT NULL, received_at TEXT, path TEXT, scope TEXT, body_bytes BIGINT NOT NULL,
                body_shown TEXT, recorded_at_ms BIGINT NOT NULL,
                PRIMARY KEY (record_topic, record_partition, record_offset, event_id));
            CREATE INDEX raw_deliveries_by_event ON raw_deliveries (event_id);
            CREATE INDEX raw_deliveries_by_time ON raw_deliveries (recorded_at_ms);
            CREATE INDEX raw_deliveries_by_position ON raw_deliveries (source, record_partition, record_offset);
            CREATE INDEX purchase_history_by_event ON purchase_history (event_id);
            CREATE TABLE store_calls (
                source TEXT NOT NULL, app TEXT NOT NULL, subject TEXT NOT NULL, environment TEXT, call TEXT NOT NULL,
                at_ms BIGINT NOT NULL, outcome TEXT NOT NULL, detail TEXT NOT NULL);
            CREATE INDEX store_calls_by_purchase ON store_calls (source, app, subject);
            CREATE INDEX store_calls_by_time ON store_calls (at_ms);
            """
        },
    ]
}
