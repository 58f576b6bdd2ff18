import Config
import Testing
import Verifiers

/// `catalog` and the credential kinds of `api.tokens` (docs/catalog.md, docs/security.md).
@Suite("Configuration: catalog and credential kinds")
struct CatalogConfigTests {
    @Test("a catalog is read: apps by every id, products by every store name, prices per currency, entitlements")
    func read() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: """
            catalog:
              apps:
                - name: Demo
                  ids: [com.example.demo, demo-citcon]
                  products:
                    - { id: pro.monthly, apple: com.example.pro.monthly, google: pro_monthly, prices: { USD: 1999, EUR: 1899 }, entitlements: [pro] }
                    - { id: pro.yearly, prices: { USD: 14999 }, entitlements: [pro, support] }
            """)
        let catalog = config.catalog
        #expect(catalog.product(app: "demo-citcon", id: "pro.monthly")?.pricesMinor == ["USD": 1999, "EUR": 1899])
        #expect(catalog.product(app: "com.example.demo", id: "pro_monthly") == nil, "checkouts name the catalog id")
        #expect(catalog.entitlements(app: "com.example.demo", source: "apple", product: "com.example.pro.monthly") == ["pro"])
        #expect(catalog.entitlements(app: "com.example.demo", source: "google", product: "pro_monthly") == ["pro"])
        #expect(catalog.entitlements(app: "demo-citcon", source: "citcon", product: "pro.monthly") == ["pro"])
        #expect(catalog.entitlements(app: "com.example.demo", source: "apple", product: "pro.yearly") == ["pro", "support"])
        #expect(catalog.entitlements(app: "another.app", source: "apple", product: "com.example.pro.monthly").isEmpty)
        // A store's own id counts for that store only: a Google product named like an Apple one grants nothing.
        #expect(catalog.entitlements(app: "com.example.demo", source: "google", product: "com.example.pro.monthly").isEmpty)
        #expect(catalog.entitlements(app: "com.example.demo", source: "citcon", product: "pro_monthly").isEmpty)
    }

    @Test("refused, naming the key: an id in two apps, a name for two products, a price that is not minor units, a bad currency or entitlement",
          arguments: [
            ("catalog: { apps: [{ name: A, ids: [x], products: [] }, { name: B, ids: [x], products: [] }] }", "catalog.apps"),
            ("catalog: { apps: [{ name: A, ids: [], products: [] }] }", "catalog.apps[0].ids"),
            ("catalog: { apps: [{ name: A, ids: [x], products: [{ id: p }, { id: q, apple: p }] }] }", "catalog.apps[0].products"),
            ("catalog: { apps: [{ name: A, ids: [x], products: [{ id: p, prices: { USD: 19.99 } }] }] }", "catalog.apps[0].products[0].prices.USD"),
            ("catalog: { apps: [{ name: A, ids: [x], products: [{ id: p, prices: { USD: 0 } }] }] }", "catalog.apps[0].products[0].prices.USD"),
            ("catalog: { apps: [{ name: A, ids: [x], products: [{ id: p, prices: { usd: 1 } }] }] }", "catalog.apps[0].products[0].prices.usd"),
            ("catalog: { apps: [{ name: A, ids: [x], products: [{ id: p, entitlements: [\"a b\"] }] }] }", "catalog.apps[0].products[0].entitlements"),
          ])
    func refused(yaml: String, key: String) throws {
        do {
            _ = try SenderCatalog.standard.parseConfig(yaml: yaml)
            Issue.record("expected an error for \(yaml)")
        } catch {
            #expect(error.key == key, "\(yaml): \(error)")
        }
    }

    @Test("api.tokens kinds: plain tokens are server credentials; a client credential lists its apps, has a user token key for each, never refunds")
    func credentialKinds() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: """
            api:
              tokens:
                - backend-0123456789
                - { token: in-the-app-0123456789, kind: client, apps: [com.example.demo], ratePerSecond: 50, rateBurst: 100 }
                - { token: busy-backend-0123456789, ratePerSecond: 5000 }
              userTokenKeys: { com.example.demo: /etc/tollgate/user-token.pub.pem }
            """)
        #expect(config.api.tokens.map(\.kind) == [.server, .client, .server])
        #expect(config.api.tokens.map(\.ratePerSecond) == [nil, 50, 5000] && config.api.tokens.map(\.rateBurst) == [nil, 100, nil])
        #expect(config.api.ratePerSecond == 500 && config.api.rateBurst == 1000)
        #expect(config.api.userTokenKeys == ["com.example.demo": "/etc/tollgate/user-token.pub.pem"])
        for (yaml, key) in [("api: { tokens: [{ token: in-the-app-0123456789, kind: client }] }", "api.tokens[0].apps"),
                            ("api: { tokens: [{ token: in-the-app-0123456789, kind: client, apps: [a], refunds: true }], userTokenKeys: { a: k } }",
                             "api.tokens[0].refunds"),
                            ("api: { tokens: [{ token: in-the-app-0123456789, kind: client, apps: [a] }] }", "api.userTokenKeys.a"),
                            ("api: { tokens: [{ token: in-the-app-0123456789, kind: public, apps: [a] }] }", "api.tokens[0].kind"),
                            ("api: { tokens: [{ token: busy-backend-0123456789, ratePerSecond: 0 }] }", "api.tokens[0].ratePerSecond")] {
            do {
                _ = try SenderCatalog.standard.parseConfig(yaml: yaml)
                Issue.record("expected an error for \(yaml)")
            } catch {
                #expect(error.key == key, "\(yaml): \(error)")
            }
        }
    }

    @Test("operator credentials: named, at least 32 characters, no apps or refunds, names unique; read-only unless actions; the console's section")
    func operatorCredentials() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: """
            api:
              tokens:
                - backend-0123456789
                - { token: operator-credential-0123456789-abcd, kind: operator, name: alice, actions: true }
                - { token: operator-credential-0123456789-efgh, kind: operator, name: bob }
            console: { path: /ops/console, sessionMinutes: 60, historyDays: 30 }
            """)
        #expect(config.api.operators.map(\.name) == ["alice", "bob"])
        #expect(config.api.operators.map(\.actions) == [true, false])
        #expect(config.console.path == "/ops/console" && config.console.sessionMinutes == 60 && config.console.historyDays == 30)
        #expect(try SenderCatalog.standard.parseConfig(yaml: "api: { tokens: [backend-0123456789] }").console.path == "/console")
        let long = "operator-credential-0123456789-abcd"
        for (yaml, key) in [("api: { tokens: [{ token: short-operator-012345, kind: operator, name: a }] }", "api.tokens[0].token"),
                            ("api: { tokens: [{ token: \(long), kind: operator }] }", "api.tokens[0].name"),
                            ("api: { tokens: [{ token: \(long), kind: operator, name: \"<b>\" }] }", "api.tokens[0].name"),
                            ("api: { tokens: [{ token: \(long), kind: operator, name: a, apps: [x] }] }", "api.tokens[0].kind"),
                            ("api: { tokens: [{ token: \(long), kind: operator, name: a }, { token: \(long)-2, kind: operator, name: a }] }", "api.tokens"),
                            ("console: { path: console }", "console.path"),
                            ("console: { path: \"/a/../b\" }", "console.path"),
                            ("console: { path: //evil.example }", "console.path"),
                            ("console: { path: /v1/console }", "console.path"),
                            ("console: { path: /webhooks }", "console.path"),
                            ("console: { sessionMinutes: 1 }", "console.sessionMinutes")] {
            do {
                _ = try SenderCatalog.standard.parseConfig(yaml: yaml)
                Issue.record("expected an error for \(yaml)")
            } catch {
                #expect(error.key == key, "\(yaml): \(error)")
            }
        }
    }
}
