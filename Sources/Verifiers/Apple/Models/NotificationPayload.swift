/// `ResponseBodyV2DecodedPayload`: exactly one of `data`, `summary`, `externalPurchaseToken`, `appData`.
public struct NotificationPayload: Sendable, Decodable {
    public var notificationType: AppleNotificationType?
    public var subtype: AppleSubtype?
    public var notificationUUID: String?
    public var data: NotificationData?
    public var summary: Summary?
    public var externalPurchaseToken: ExternalPurchaseToken?
    public var appData: AppData?
    public var version: String?
    public var signedDate: AppleDate?

    public struct NotificationData: Sendable, Decodable {
        public var appAppleId: Int64?
        public var bundleId: String?
        public var bundleVersion: String?
        public var environment: AppleEnvironment?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?
        public var status: Int?
        public var consumptionRequestReason: String?
    }

    public struct Summary: Sendable, Decodable {
        public var requestIdentifier: String?
        public var environment: AppleEnvironment?
        public var appAppleId: Int64?
        public var bundleId: String?
        public var productId: String?
        public var storefrontCountryCodes: [String]?
        public var failedCount: Int64?
        public var succeededCount: Int64?
    }

    public struct ExternalPurchaseToken: Sendable, Decodable {
        public var externalPurchaseId: String?
        public var tokenCreationDate: AppleDate?
        public var appAppleId: Int64?
        public var bundleId: String?
    }

    public struct AppData: Sendable, Decodable {
        public var appAppleId: Int64?
        public var bundleId: String?
        public var environment: AppleEnvironment?
        public var signedAppTransactionInfo: String?
    }
}
