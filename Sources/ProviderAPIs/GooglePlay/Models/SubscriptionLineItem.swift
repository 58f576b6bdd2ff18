import Events

extension SubscriptionPurchaseV2 {
    /// `SubscriptionPurchaseLineItem`: one base plan or offer of the purchase.
    public struct LineItem: Decodable, Sendable, Equatable {
        /// The subscription's product id, e.g. `monthly001`.
        public let productId: String?
        /// When access ended or will end unless extended (renewed).
        public let expiryTime: Timestamp?
        /// Set for an auto-renewing plan, absent for a prepaid one.
        public let autoRenewingPlan: AutoRenewingPlan?
        /// Set for a prepaid plan.
        public let prepaidPlan: PrepaidPlan?
        public let offerDetails: OfferDetails?
        public let latestSuccessfulOrderId: String?
        /// The phase of the offer the item is in now.
        public let offerPhase: OfferPhase?
        /// Set for 60 days when this item replaced another (an upgrade, a downgrade, a plan change).
        public let itemReplacement: ItemReplacement?

        private enum CodingKeys: String, CodingKey {
            case productId, expiryTime, autoRenewingPlan, prepaidPlan, offerDetails, latestSuccessfulOrderId, offerPhase, itemReplacement
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            productId = try c.decodeIfPresent(String.self, forKey: .productId)
            expiryTime = try c.decodeTimestampIfPresent(forKey: .expiryTime)
            autoRenewingPlan = try c.decodeIfPresent(AutoRenewingPlan.self, forKey: .autoRenewingPlan)
            prepaidPlan = try c.decodeIfPresent(PrepaidPlan.self, forKey: .prepaidPlan)
            offerDetails = try c.decodeIfPresent(OfferDetails.self, forKey: .offerDetails)
            latestSuccessfulOrderId = try c.decodeIfPresent(String.self, forKey: .latestSuccessfulOrderId)
            offerPhase = try c.decodeIfPresent(OfferPhase.self, forKey: .offerPhase)
            itemReplacement = try c.decodeIfPresent(ItemReplacement.self, forKey: .itemReplacement)
        }
    }

    /// `OfferPhase`: exactly one of its objects is set; which one is the information.
    public struct OfferPhase: Decodable, Sendable, Equatable {
        public let basePrice: Marker?
        public let freeTrial: Marker?
        public let introductoryPrice: Marker?
        public let prorationPeriod: Marker?

        /// `base`, `free_trial`, `introductory`, `proration`; nil when Google names a phase not known here.
        public var name: String? {
            if freeTrial != nil { return "free_trial" }
            if introductoryPrice != nil { return "introductory" }
            if prorationPeriod != nil { return "proration" }
            if basePrice != nil { return "base" }
            return nil
        }
    }

    public struct ItemReplacement: Decodable, Sendable, Equatable {
        /// The product replaced.
        public let productId: String?
        public let basePlanId: String?
        public let offerId: String?
        /// `WITH_TIME_PRORATION`, `CHARGE_PRORATED_PRICE`, `WITHOUT_PRORATION`, `CHARGE_FULL_PRICE`, `DEFERRED`, `KEEP_EXISTING`.
        public let replacementMode: String?
    }

    public struct AutoRenewingPlan: Decodable, Sendable, Equatable {
        /// False once the user (or the system) turned renewal off.
        public let autoRenewEnabled: Bool?
        /// What the user is charged each period (`google.type.Money`).
        public let recurringPrice: Money?
        /// A price increase the user must consent to, or the subscription is canceled at its deadline.
        public let priceStepUpConsentDetails: PriceStepUpConsentDetails?
        /// An installment plan: the payments committed to.
        public let installmentDetails: InstallmentDetails?
    }

    public struct PriceStepUpConsentDetails: Decodable, Sendable, Equatable {
        /// `PENDING`, `CONFIRMED` (consented, not yet charged), `COMPLETED` (consented and charged).
        public let state: String?
        public let consentDeadlineTime: Timestamp?
        public let newPrice: Money?

        private enum CodingKeys: String, CodingKey { case state, consentDeadlineTime, newPrice }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            state = try c.decodeIfPresent(String.self, forKey: .state)
            consentDeadlineTime = try c.decodeTimestampIfPresent(forKey: .consentDeadlineTime)
            newPrice = try c.decodeIfPresent(Money.self, forKey: .newPrice)
        }
    }

    public struct InstallmentDetails: Decodable, Sendable, Equatable {
        public let initialCommittedPaymentsCount: Int?
        public let subsequentCommittedPaymentsCount: Int?
        public let remainingCommittedPaymentsCount: Int?
    }

    /// `google.type.Money`: whole `units` (an int64, a string on the wire) plus `nanos` of the currency.
    public struct Money: Decodable, Sendable, Equatable {
        public let currencyCode: String?
        public let units: Int64?
        public let nanos: Int?

        /// The amount in millionths of the currency unit, as events carry prices; nil without a currency.
        public var amountMicros: Int64? {
            guard currencyCode?.isEmpty == false else { return nil }
            let (whole, overflow) = (units ?? 0).multipliedReportingOverflow(by: 1_000_000)
            return overflow ? nil : whole + Int64((nanos ?? 0) / 1_000)
        }

        private enum CodingKeys: String, CodingKey { case currencyCode, units, nanos }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            currencyCode = try c.decodeIfPresent(String.self, forKey: .currencyCode)
            units = try c.decodeInt64StringIfPresent(forKey: .units)
            nanos = try c.decodeIfPresent(Int.self, forKey: .nanos)
        }
    }

    public struct PrepaidPlan: Decodable, Sendable, Equatable {
        /// From when the user may buy more time (top-up); absent once the plan expired.
        public let allowExtendAfterTime: Timestamp?

        private enum CodingKeys: String, CodingKey { case allowExtendAfterTime }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            allowExtendAfterTime = try c.decodeTimestampIfPresent(forKey: .allowExtendAfterTime)
        }
    }

    public struct OfferDetails: Decodable, Sendable, Equatable {
        public let basePlanId: String?
        /// Absent for a base plan bought without an offer.
        public let offerId: String?
        public let offerTags: [String]?
    }
}
