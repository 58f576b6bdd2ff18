/// The `catalog` section (docs/catalog.md).
extension ConfigLoader {
    static func readCatalog(_ s: ConfigReader) throws(ConfigError) -> CatalogSettings {
        let apps = try s.list("apps") { (a) throws(ConfigError) in try readCatalogApp(a) }
        var owners: [String: String] = [:]
        for app in apps {
            for id in app.ids {
                if let other = owners.updateValue(app.name, forKey: id) {
                    throw ConfigError(key: s.name("apps"), message: "app id \(id) belongs to both \(other) and \(app.name)")
                }
            }
        }
        var names = Set<String>()
        for app in apps where !names.insert(app.name).inserted {
            throw ConfigError(key: s.name("apps"), message: "app \(app.name) is listed twice")
        }
        return CatalogSettings(apps: apps)
    }

    private static func readCatalogApp(_ a: ConfigReader) throws(ConfigError) -> CatalogSettings.App {
        let name = try a.requiredString("name")
        let ids = try a.strings("ids")
        guard !ids.isEmpty, !ids.contains(where: \.isEmpty) else {
            throw ConfigError(key: a.name("ids"), message: "list the ids this app's purchases are kept under (bundle id, package name, provider account)")
        }
        let products = try a.list("products") { (p) throws(ConfigError) in try readCatalogProduct(p) }
        // Every name a store may give a purchase points at one product only.
        var named: [String: String] = [:]
        for product in products {
            for alias in Set([product.id, product.apple, product.google].compactMap { $0 }) {
                if let other = named.updateValue(product.id, forKey: alias) {
                    throw ConfigError(key: a.name("products"), message: "\(alias) names both \(other) and \(product.id)")
                }
            }
        }
        return CatalogSettings.App(name: name, ids: ids, products: products)
    }

    private static func readCatalogProduct(_ p: ConfigReader) throws(ConfigError) -> CatalogSettings.Product {
        let id = try p.requiredString("id")
        guard id.count <= 200, !id.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw ConfigError(key: p.name("id"), message: "expected 1 to 200 characters without control characters")
        }
        var prices: [String: Int64] = [:]
        for (currency, text) in try p.stringMap("prices") {
            guard currency.count == 3, currency.unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) }) else {
                throw ConfigError(key: p.name("prices") + ".\(currency)", message: "expected an ISO 4217 code in upper case")
            }
            guard let amount = Int64(text), (1...1_000_000_000_000).contains(amount) else {
                throw ConfigError(key: p.name("prices") + ".\(currency)", message: "expected a positive integer of minor units (cents), got \"\(text)\"")
            }
            prices[currency] = amount
        }
        let entitlements = try p.strings("entitlements")
        for name in entitlements where !isEntitlementName(name) {
            throw ConfigError(key: p.name("entitlements"), message: "expected names of 1 to 64 letters, digits, '.', '_', '-', got \"\(name)\"")
        }
        return CatalogSettings.Product(id: id, apple: try p.string("apple").flatMap { $0.isEmpty ? nil : $0 },
                                       google: try p.string("google").flatMap { $0.isEmpty ? nil : $0 },
                                       pricesMinor: prices, entitlements: Array(Set(entitlements)).sorted())
    }

    private static func isEntitlementName(_ name: String) -> Bool {
        (1...64).contains(name.count)
            && name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0)) }
    }
}
