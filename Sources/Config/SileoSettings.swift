import Events

/// `sileo.vendors`: Tollgate as the payment vendor of Sileo repositories (docs/sileo.md), one vendor per
/// base path, each with its sign-in hand-off and its package catalog.
public struct SileoSettings: Sendable {
    public var vendors: [Vendor] = []
    public init() {}

    public struct Vendor: Sendable {
        /// Where the vendor's endpoints are served, e.g. `/sileo/chariz`: a repository's `payment_endpoint`
        /// is `publicBaseURL` + this path.
        public var basePath: String
        public var name: String
        public var icon: String
        public var description: String
        public var authenticationBanner: Banner?
        /// The URL Sileo and browsers reach Tollgate at (no trailing slash): the download URLs and the
        /// sign-in return URL are built on it.
        public var publicBaseURL: String
        public var app: String
        public var environment: NormalizedEvent.Environment
        /// The payment provider checkouts go through (`alipayplus` or `citcon`).
        public var provider: String
        public var signIn: SignIn
        /// Where `packages[].file` paths are found.
        public var downloadDirectory: String?
        /// The file holding the secret (at least 32 bytes) that signs the expiring redirects to
        /// `packages[].downloadURL`, shared with the merchant's file server (docs/sileo.md#downloads).
        public var downloadURLSecretFile: String?
        public var downloadKeyTtlSeconds: Int
        public var tokenTtlDays: Int
        public var packages: [Package]
        /// For a provider whose checkout has no payment page of its own (Citcon: the app's SDK makes the
        /// order): the merchant's page that starts the payment; Sileo opens it with `reference` and `ipn`.
        public var paymentPageURL: String?

        public init(basePath: String, name: String, icon: String, description: String, authenticationBanner: Banner? = nil,
                    publicBaseURL: String, app: String, environment: NormalizedEvent.Environment = .production, provider: String,
                    signIn: SignIn, downloadDirectory: String? = nil, downloadURLSecretFile: String? = nil, downloadKeyTtlSeconds: Int = 120,
                    tokenTtlDays: Int = 180, packages: [Package], paymentPageURL: String? = nil) {
            self.basePath = basePath; self.name = name; self.icon = icon; self.description = description
            self.authenticationBanner = authenticationBanner; self.publicBaseURL = publicBaseURL; self.app = app
            self.environment = environment; self.provider = provider; self.signIn = signIn
            self.downloadDirectory = downloadDirectory; self.downloadURLSecretFile = downloadURLSecretFile
            self.downloadKeyTtlSeconds = downloadKeyTtlSeconds
            self.tokenTtlDays = tokenTtlDays; self.packages = packages; self.paymentPageURL = paymentPageURL
        }
    }

    public struct Banner: Sendable, Equatable {
        public var message: String
        public var button: String
        public init(message: String, button: String) { self.message = message; self.button = button }
    }

    /// The merchant's own sign-in page and the public key (P-256 PEM) its ES256 assertions verify with.
    public struct SignIn: Sendable, Equatable {
        public var url: String
        public var assertionKeyFile: String
        public init(url: String, assertionKeyFile: String) { self.url = url; self.assertionKeyFile = assertionKeyFile }
    }

    /// One paid package of the repository's catalog.
    public struct Package: Sendable, Equatable {
        /// The Debian package id Sileo asks about.
        public var id: String
        /// The product the entitlement store knows the purchase by.
        public var product: String
        /// In the currency's minor units (cents).
        public var amountMinor: Int64
        /// ISO 4217, upper case.
        public var currency: String
        /// What Sileo shows, e.g. `$1.99`.
        public var price: String
        public var available: Bool
        public var recoveryURL: String?
        /// A path under `downloadDirectory`; either this or `downloadURL`.
        public var file: String?
        /// Where the merchant's file server has the package (`https://`, no query or fragment): the download
        /// route redirects there with an expiring signature, never to the bare URL.
        public var downloadURL: String?

        public init(id: String, product: String, amountMinor: Int64, currency: String, price: String, available: Bool = true,
                    recoveryURL: String? = nil, file: String? = nil, downloadURL: String? = nil) {
            self.id = id; self.product = product; self.amountMinor = amountMinor; self.currency = currency; self.price = price
            self.available = available; self.recoveryURL = recoveryURL; self.file = file; self.downloadURL = downloadURL
        }
    }
}
