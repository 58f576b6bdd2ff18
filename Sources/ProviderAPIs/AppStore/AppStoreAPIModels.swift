/// The App Store Server API's answers as Apple documents them, holding the signed JWS strings as
/// received: the caller verifies each with the notifications' chain verifier. Dates are epoch
/// milliseconds. Fields Apple may leave out are optional.

/// Get Transaction Info.
public struct TransactionInfoResponse: Decodable, Sendable {
    public var signedTransactionInfo: String
}

/// Get Transaction History (v2): one page of up to 20 transactions.
public struct TransactionHistoryPage: Decodable, Sendable {
    public var revision: String?
    public var hasMore: Bool?
    public var bundleId: String?
    public var appAppleId: Int64?
    public var environment: String?
    public var signedTransactions: [String]?
}

/// Get All Subscription Statuses.
public struct SubscriptionStatusesResponse: Decodable, Sendable {
    public struct Group: Decodable, Sendable {
        public var subscriptionGroupIdentifier: String?
        public var lastTransactions: [LastTransaction]?
    }

    public struct LastTransaction: Decodable, Sendable {
        /// 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
        public var status: Int?
        public var originalTransactionId: String?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?
    }

    public var environment: String?
    public var bundleId: String?
    public var appAppleId: Int64?
    public var data: [Group]?
}

/// Get Notification History's request body.
public struct NotificationHistoryRequest: Encodable, Sendable, Equatable {
    public var startDate: Int64
    public var endDate: Int64
    public var notificationType: String?
    public var notificationSubtype: String?
    public var transactionId: String?
    public var onlyFailures: Bool?

    public init(startDate: Int64, endDate: Int64, notificationType: String? = nil, notificationSubtype: String? = nil,
                transactionId: String? = nil, onlyFailures: Bool? = nil) {
        self.startDate = startDate
        self.endDate = endDate
        self.notificationType = notificationType
        self.notificationSubtype = notificationSubtype
        self.transactionId = transactionId
        self.onlyFailures = onlyFailures
    }
}

/// One delivery attempt of a notification, as Apple recorded it.
public struct SendAttempt: Decodable, Sendable {
    public var attemptDate: Int64?
    /// `SUCCESS`, `TIMED_OUT`, `TLS_ISSUE`, `CIRCULAR_REDIRECT`, `NO_RESPONSE`, `SOCKET_ISSUE`,
    /// `UNSUPPORTED_CHARSET`, `INVALID_RESPONSE`, `PREMATURE_CLOSE`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`, `OTHER`.
    public var sendAttemptResult: String?
}

/// Get Notification History: one page.
public struct NotificationHistoryPage: Decodable, Sendable {
    public struct Item: Decodable, Sendable {
        public var signedPayload: String?
        public var sendAttempts: [SendAttempt]?
    }

    public var paginationToken: String?
    public var hasMore: Bool?
    public var notificationHistory: [Item]?
}

/// Request a Test Notification.
public struct TestNotificationRequested: Decodable, Sendable {
    public var testNotificationToken: String
}

/// Get Test Notification Status.
public struct TestNotificationStatus: Decodable, Sendable {
    public var signedPayload: String?
    public var sendAttempts: [SendAttempt]?
}

/// Send Consumption Information's request body, Apple's `ConsumptionRequest` (the current one; the
/// older `ConsumptionRequestV1` on `/inApps/v1/...` is now only for the Advanced Commerce API). Apple
/// refuses a body whose `customerConsented` is not true, and a `consumptionPercentage` other than 0
/// when `deliveryStatus` is not `DELIVERED`.
public struct ConsumptionRequest: Encodable, Sendable, Equatable {
    /// Whether the app delivered the purchase and it works.
    public enum DeliveryStatus: String, Encodable, Sendable {
        case delivered = "DELIVERED"
        case undeliveredQualityIssue = "UNDELIVERED_QUALITY_ISSUE"
        case undeliveredWrongItem = "UNDELIVERED_WRONG_ITEM"
        case undeliveredServerOutage = "UNDELIVERED_SERVER_OUTAGE"
        case undeliveredOther = "UNDELIVERED_OTHER"
    }

    /// `DECLINE`, `GRANT_FULL` or `GRANT_PRORATED`.
    public enum RefundPreference: String, Encodable, Sendable {
        case decline = "DECLINE", grantFull = "GRANT_FULL", grantProrated = "GRANT_PRORATED"
    }

    public var customerConsented: Bool
    public var deliveryStatus: DeliveryStatus
    public var sampleContentProvided: Bool
    /// How much of the purchase the customer consumed, in milliunits of a percent: 0 to 100000.
    public var consumptionPercentage: Int?
    public var refundPreference: RefundPreference?

    public init(customerConsented: Bool, deliveryStatus: DeliveryStatus, sampleContentProvided: Bool,
                consumptionPercentage: Int? = nil, refundPreference: RefundPreference? = nil) {
        self.customerConsented = customerConsented
        self.deliveryStatus = deliveryStatus
        self.sampleContentProvided = sampleContentProvided
        self.consumptionPercentage = consumptionPercentage
        self.refundPreference = refundPreference
    }
}

/// Apple's error body.
struct AppStoreErrorPayload: Decodable {
    var errorCode: Int?
    var errorMessage: String?
}
