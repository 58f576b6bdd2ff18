import Events

/// The `sileo` section (docs/configuration.md, docs/sileo.md).
extension ConfigLoader {
    static func readSileo(_ s: ConfigReader, catalog: CatalogSettings) throws(ConfigError) -> SileoSettings {
        var settings = SileoSettings()
        settings.vendors = try s.list("vendors") { (v) throws(ConfigError) in try readSileoVendor(v, catalog: catalog) }
        var paths = Set<String>()
        for vendor in settings.vendors where !paths.insert(vendor.basePath).inserted {
            throw ConfigError(key: s.name("vendors"), message: "basePath \(vendor.basePath) is configured twice")
        }
        return settings
    }

    private static func readSileoVendor(_ v: ConfigReader, catalog: CatalogSettings) throws(ConfigError) -> SileoSettings.Vendor {
        let basePath = try v.requiredString("basePath")
        // Segments of letters, digits, '.', '_', '-': the path is matched as it is written, and may not
        // take over another route's space.
        let segments = basePath.split(separator: "/", omittingEmptySubsequences: false)
        guard basePath.hasPrefix("/"), segments.count >= 2, segments.dropFirst().allSatisfy({ segment in
            !segment.isEmpty && segment != "." && segment != ".." && segment.unicodeScalars.allSatisfy(isPathCharacter)
        }), !["v1", "webhooks", "healthz", "readyz", "metrics"].contains(String(segments[1])) else {
            throw ConfigError(key: v.name("basePath"),
                              message: "expected a path like /sileo/<name> (segments of letters, digits, '.', '_', '-'; not under /v1, /webhooks or the probes), got \"\(basePath)\"")
        }
        let banner = try v.section("authenticationBanner") { (b) throws(ConfigError) -> SileoSettings.Banner? in
            let message = try b.string("message"), button = try b.string("button")
            guard let message, let button else {
                if message != nil || button != nil { throw ConfigError(key: b.name("message"), message: "message and button go together") }
                return nil
            }
            return SileoSettings.Banner(message: message, button: button)
        }
        var publicBaseURL = try v.credentialedURL("publicBaseURL", default: "")
        while publicBaseURL.hasSuffix("/") { publicBaseURL.removeLast() }
        let environmentText = try v.string("environment", default: "production")
        guard let environment = NormalizedEvent.Environment(rawValue: environmentText) else {
            throw ConfigError(key: v.name("environment"), message: "expected production or sandbox, got \"\(environmentText)\"")
        }
        // Which names are checkout providers is the workers' catalog's to say (`SileoVendor.load`).
        let provider = try v.requiredString("provider")
        let signIn = try v.section("signIn") { (i) throws(ConfigError) in
            SileoSettings.SignIn(url: try i.credentialedURL("url", default: ""), assertionKeyFile: try i.requiredPath("assertionKeyFile"))
        }
        let downloadDirectory = try v.path("downloadDirectory")
        let downloadURLSecretFile = try v.path("downloadURLSecretFile")
        let paymentPageURL: String? = try v.string("paymentPageURL") == nil ? nil : try v.credentialedURL("paymentPageURL", default: "")
        let app = try v.requiredString("app")
        let packages = try v.list("packages") { (p) throws(ConfigError) in
            try readSileoPackage(p, downloadDirectory: downloadDirectory, app: app, catalog: catalog)
        }
        var ids = Set<String>()
        for package in packages where !ids.insert(package.id).inserted {
            throw ConfigError(key: v.name("packages"), message: "package \(package.id) is listed twice")
        }
        // Without it a downloadURL would be a static link the single-use key only points to.
        if downloadURLSecretFile == nil, packages.contains(where: { $0.downloadURL != nil }) {
            throw ConfigError(key: v.name("downloadURLSecretFile"),
                              message: "is required when a package has a downloadURL: it signs the expiring redirect the merchant's server checks")
        }
        return SileoSettings.Vendor(
            basePath: basePath, name: try v.requiredString("name"), icon: try v.requiredString("icon"),
            description: try v.requiredString("description"), authenticationBanner: banner, publicBaseURL: publicBaseURL,
            app: app, environment: environment, provider: provider, signIn: signIn,
            downloadDirectory: downloadDirectory, downloadURLSecretFile: downloadURLSecretFile,
            downloadKeyTtlSeconds: try v.int("downloadKeyTtlSeconds", default: 120, range: 10...3_600),
            tokenTtlDays: try v.int("tokenTtlDays", default: 180, range: 1...3_650), packages: packages, paymentPageURL: paymentPageURL)
    }

    /// A package's amount is its catalog product's price in the package's currency: one price list for
    /// checkouts and Sileo, never a second one to drift.
    private static func readSileoPackage(_ p: ConfigReader, downloadDirectory: String?, app: String,
                                         catalog: CatalogSettings) throws(ConfigError) -> SileoSettings.Package {
        let id = try p.requiredString("id")
        // Debian package names: lower-case letters, digits, '+', '-', '.', starting with a letter or digit.
        guard let first = id.unicodeScalars.first, ("a"..."z").contains(first) || ("0"..."9").contains(first),
              id.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0) }),
              id.count <= 200 else {
            throw ConfigError(key: p.name("id"), message: "expected a Debian package name (a-z, 0-9, '+', '-', '.'), got \"\(id)\"")
        }
        let currency = try p.requiredString("currency")
        guard currency.count == 3, currency.unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) }) else {
            throw ConfigError(key: p.name("currency"), message: "expected an ISO 4217 code in upper case, got \"\(currency)\"")
        }
        let file = try p.string("file").flatMap { $0.isEmpty ? nil : $0 }
        let downloadURL = try p.string("downloadURL").flatMap { $0.isEmpty ? nil : $0 }
        switch (file, downloadURL) {
        case (nil, nil), (.some, .some):
            throw ConfigError(key: p.name("file"), message: "give exactly one of file and downloadURL")
        case (let file?, nil):
            guard downloadDirectory != nil else { throw ConfigError(key: p.name("file"), message: "needs downloadDirectory") }
            // Relative, without `..`: a file can only ever be found inside the directory.
            guard !file.hasPrefix("/"), !file.split(separator: "/").contains(where: { $0 == ".." || $0 == "." }) else {
                throw ConfigError(key: p.name("file"), message: "expected a path inside downloadDirectory (relative, no '.' or '..'), got \"\(file)\"")
            }
        case (nil, let url?):
            _ = try p.credentialedURL("downloadURL", default: "")
            // The signature is appended as the query; the path it covers must be the whole URL's.
            guard !url.contains("?"), !url.contains("#"), url.split(separator: "/", omittingEmptySubsequences: false).count > 3 else {
                throw ConfigError(key: p.name("downloadURL"), message: "expected an https URL with a path and no query or fragment, got \"\(url)\"")
            }
        }
        let recoveryURL = try p.string("recoveryURL").flatMap { $0.isEmpty ? nil : $0 }
        if recoveryURL != nil { _ = try p.credentialedURL("recoveryURL", default: "") }
        let product = try p.requiredString("product")
        guard let priced = catalog.product(app: app, id: product) else {
            throw ConfigError(key: p.name("product"), message: "names no product of app \(app) in the catalog (catalog.apps[].products)")
        }
        guard let amount = priced.pricesMinor[currency] else {
            throw ConfigError(key: p.name("currency"), message: "the catalog gives \(product) no price in \(currency)")
        }
        return SileoSettings.Package(
            id: id, product: product,
            amountMinor: amount, currency: currency,
            price: try p.requiredString("price"), available: try p.bool("available", default: true),
            recoveryURL: recoveryURL, file: file, downloadURL: downloadURL)
    }

    private static func isPathCharacter(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "._-".unicodeScalars.contains(scalar))
    }
}
