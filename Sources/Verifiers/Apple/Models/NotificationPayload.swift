import Rejections

/// `ResponseBodyV2DecodedPayload`: exactly one of `data`, `summary`, `externalPurchaseToken`, `appData`.
public struct NotificationPayload: Sendable {
    public var notificationType: AppleNotificationType?
    public var subtype: AppleSubtype?
    public var notificationUUID: String?
    public var data: NotificationData?
    public var summary: Summary?
    public var externalPurchaseToken: ExternalPurchaseToken?
    public var appData: AppData?
    public var version: String?
    public var signedDate: AppleDate?

    init(_ f: AppleFields) throws(Rejection) {
        notificationType = try f.value("notificationType")
        subtype = try f.value("subtype")
        notificationUUID = try f.string("notificationUUID")
        version = try f.string("version")
        signedDate = try f.value("signedDate")
        data = try f.nested("data").map(NotificationData.init)
        summary = try f.nested("summary").map(Summary.init)
        externalPurchaseToken = try f.nested("externalPurchaseToken").map(ExternalPurchaseToken.init)
        appData = try f.nested("appData").map(AppData.init)
    }

    public struct NotificationData: Sendable {
        public var appAppleId: Int64?
        public var bundleId: String?
        public var bundleVersion: String?
        public var environment: AppleEnvironment?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?
        public var status: Int64?
        public var consumptionRequestReason: String?

        init(_ f: AppleFields) throws(Rejection) {
            appAppleId = try f.int("appAppleId")
            bundleId = try f.string("bundleId")
            bundleVersion = try f.string("bundleVersion")
            environment = try f.value("environment")
            signedTransactionInfo = try f.string("signedTransactionInfo")
            signedRenewalInfo = try f.string("signedRenewalInfo")
            status = try f.int("status")
            consumptionRequestReason = try f.string("consumptionRequestReason")
        }
    }

    public struct Summary: Sendable {
        public var requestIdentifier: String?
        public var environment: AppleEnvironment?
        public var appAppleId: Int64?
        public var bundleId: String?
        public var productId: String?
        public var failedCount: Int64?
        public var succeededCount: Int64?

        init(_ f: AppleFields) throws(Rejection) {
            requestIdentifier = try f.string("requestIdentifier")
            environment = try f.value("environment")
            appAppleId = try f.int("appAppleId")
            bundleId = try f.string("bundleId")
            productId = try f.string("productId")
            failedCount = try f.int("failedCount")
            succeededCount = try f.int("succeededCount")
        }
    }

    public struct ExternalPurchaseToken: Sendable {
        public var externalPurchaseId: String?
        public var tokenCreationDate: AppleDate?
        public var appAppleId: Int64?
        public var bundleId: String?
        /// `ACQUISITION` or `SERVICES`.
        public var tokenType: String?

        init(_ f: AppleFields) throws(Rejection) {
            externalPurchaseId = try f.string("externalPurchaseId")
            tokenCreationDate = try f.value("tokenCreationDate")
            tokenType = try f.string("tokenType")
            appAppleId = try f.int("appAppleId")
            bundleId = try f.string("bundleId")
        }
    }

    public struct AppData: Sendable {
        public var appAppleId: Int64?
        public var bundleId: String?
        public var environment: AppleEnvironment?
        public var signedAppTransactionInfo: String?

        init(_ f: AppleFields) throws(Rejection) {
            appAppleId = try f.int("appAppleId")
            bundleId = try f.string("bundleId")
            environment = try f.value("environment")
            signedAppTransactionInfo = try f.string("signedAppTransactionInfo")
        }
    }
}
