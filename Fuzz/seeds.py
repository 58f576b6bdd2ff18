#!/usr/bin/env python3
"""Writes the hand-made seed inputs of each fuzz target into Fuzz/corpus/<target>/. They were the
corpus's start; `make fuzz-corpus` has since minimized it with what the fuzzer found, so rerun this
only to bring the seeds back (the merge keeps those that still add coverage)."""
import base64, json, os, sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")

def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

def write(target: str, name: str, data) -> None:
    os.makedirs(os.path.join(root, target), exist_ok=True)
    with open(os.path.join(root, target, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())

transaction = {"transactionId": "2000000123", "originalTransactionId": "2000000100", "bundleId": "com.example.app",
               "productId": "pro_monthly", "purchaseDate": 1698148900000, "expiresDate": 1700827300000, "quantity": 1,
               "type": "Auto-Renewable Subscription", "signedDate": 1698148950000, "environment": "Sandbox",
               "currency": "USD", "price": 4990, "appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138"}
renewal = {"originalTransactionId": "2000000100", "autoRenewProductId": "pro_monthly", "productId": "pro_monthly",
           "autoRenewStatus": 1, "isInBillingRetryPeriod": False, "signedDate": 1698148950000, "environment": "Sandbox",
           "renewalDate": 1700827300000, "gracePeriodExpiresDate": 1700913700000.5}
notification = {"notificationType": "SUBSCRIBED", "subtype": "INITIAL_BUY", "notificationUUID": "002e14d5-51f5-4503-b5a8-c3a1af68eb20",
                "version": "2.0", "signedDate": 1698148950000,
                "data": {"appAppleId": 1234567890, "bundleId": "com.example.app", "bundleVersion": "1", "environment": "Sandbox",
                         "signedTransactionInfo": "e30.e30.AA", "signedRenewalInfo": "e30.e30.AA", "status": 1}}
summary = {"notificationType": "RENEWAL_EXTENSION", "subtype": "SUMMARY", "notificationUUID": "u-2", "signedDate": 1698148950000,
           "summary": {"requestIdentifier": "r-1", "environment": "Production", "appAppleId": 1, "bundleId": "com.example.app",
                       "productId": "pro_monthly", "failedCount": 0, "succeededCount": 5}}
external = {"notificationType": "EXTERNAL_PURCHASE_TOKEN", "subtype": "UNREPORTED", "notificationUUID": "u-3",
            "externalPurchaseToken": {"externalPurchaseId": "SANDBOX_1", "tokenCreationDate": 1698148950000,
                                      "appAppleId": 1, "bundleId": "com.example.app"}}
rtdn_sub = {"version": "1.0", "packageName": "com.example.app", "eventTimeMillis": "1698148950000",
            "subscriptionNotification": {"version": "1.0", "notificationType": 4, "purchaseToken": "tok-1", "subscriptionId": "pro"}}
rtdn_one = {"version": "1.0", "packageName": "com.example.app", "eventTimeMillis": 1698148950000,
            "oneTimeProductNotification": {"version": "1.0", "notificationType": 1, "purchaseToken": "tok-2", "sku": "coins"}}
rtdn_void = {"packageName": "com.example.app", "eventTimeMillis": "1698148950000",
             "voidedPurchaseNotification": {"purchaseToken": "tok-3", "orderId": "GPA.1", "productType": 1, "refundType": 2}}
rtdn_test = {"version": "1.0", "packageName": "com.example.app", "eventTimeMillis": "1698148950000", "testNotification": {"version": "1.0"}}
rtdn_other = {"packageName": "com.example.app", "eventTimeMillis": "1", "futureNotification": {"purchaseToken": "tok-4"}}
rtdns = [rtdn_sub, rtdn_one, rtdn_void, rtdn_test, rtdn_other]
iaptic = {"type": "purchases.updated", "password": "fuzz-secret", "applicationUsername": "user-42",
          "notification": {"id": "n-1", "reason": "RENEWED", "date": "2024-05-01T12:00:00.000Z", "productId": "apple:pro_monthly"},
          "purchases": {"apple:pro_monthly": {"purchaseId": "apple:1000", "productId": "apple:pro_monthly", "transactionId": "apple:1001",
                                              "purchaseDate": "2024-04-01T12:00:00Z", "expirationDate": "2024-06-01T12:00:00+02:00",
                                              "lastRenewalDate": 1714564800000, "renewalIntent": "Renew", "isBillingRetryPeriod": False,
                                              "sandbox": True, "amountMicros": 4990000, "currency": "USD", "quantity": 1,
                                              "cancelationReason": "Customer"}}}
citcon_upi = {"id": "ch_1", "reference": "order-1", "transaction_type": "charge", "status": "success", "amount": 100,
              "currency": "USD", "time_created": "2021-08-14T09:47:43.000Z", "time_completed": 1628934463,
              "fields": "amount,currency,id,reference,status,time_completed,time_created,transaction_type", "sign": "00ff"}
citcon_form = ("fields=amount%2Ccurrency%2Cid%2Cnotify_status%2Creference%2Ctime&amount=100&currency=JPY&id=tx+1&notify_status=success"
               "&reference=order%2D1&time=1628934463000&sign=0123456789abcdef0123456789abcdef")
alipay = {"notifyType": "PAYMENT_RESULT", "result": {"resultCode": "SUCCESS", "resultStatus": "S", "resultMessage": "success"},
          "paymentRequestId": "pr-1", "paymentId": "2024050119040800000000", "paymentAmount": {"value": "1000", "currency": "KWD"},
          "paymentCreateTime": "2024-05-01T12:00:00+08:00", "paymentTime": "2024-05-01T12:00:05+08:00", "customerId": "c-1"}
alipay_failed = {"notifyType": "PAYMENT_RESULT", "paymentResult": {"resultCode": "USER_BALANCE_NOT_ENOUGH", "resultStatus": "F"},
                 "paymentRequestId": "pr-2", "paymentId": 42, "acquirerId": "a", "pspId": "p"}

def envelope(data, **extra):
    message = {"attributes": {"key": "value"}, "messageId": "2070443601311540", "message_id": "2070443601311540",
               "publishTime": "2021-02-26T19:13:55.749Z", "publish_time": "2021-02-26T19:13:55.749Z"}
    if data is not None:
        message["data"] = base64.b64encode(data).decode()
    message.update(extra)
    return json.dumps({"message": message, "subscription": "projects/myproject/subscriptions/mysubscription", "deliveryAttempt": 1})

# JSON: shapes, escapes, numbers at the edges, and the hostile ones the parser must refuse.
json_seeds = {
    "object": json.dumps(notification), "array": "[1, -0, 0.5, 1e400, -1E-400, 12345678901234567890123456789012345678901, true, false, null]",
    "escapes": r'{"s":"\" \\ \/ \b \f \n \r \t \u0000 \u00e9 \ud83d\ude00 \uFFFF"}', "utf8": '{"k":"é 漢字 😀"}',
    "nested": "[" * 64 + "]" * 64, "too-deep": "[" * 65 + "]" * 65, "duplicate": '{"a":1,"a":2}',
    "nfc-duplicate": '{"\u00e9":1,"e\u0301":2}', "lone-surrogate": r'["\ud800"]', "bad-utf8": b'["\xff\xfe"]',
    "overlong-utf8": b'["\xc0\xaf"]', "trailing": "{} x", "leading-zero": "[01]", "int64-edges": "[9223372036854775807,-9223372036854775808,9223372036854775808]",
    "whitespace": " \t\r\n{ \"a\" : [ ] } \n", "control": b'["a\x01"]', "empty": "",
}
for name, text in json_seeds.items():
    write("FuzzJSON", name, text)

# JWS: Apple-shaped compact strings, Google-shaped OIDC tokens, and broken ones.
apple_header = b64url(json.dumps({"alg": "ES256", "x5c": ["MIIB", "MIIC", "MIID"]}).encode())
for name, payload in [("notification", notification), ("transaction", transaction), ("renewal", renewal), ("summary", summary),
                      ("external", external)]:
    write("FuzzJWS", name, f"{apple_header}.{b64url(json.dumps(payload).encode())}.{b64url(bytes(range(64)))}")
google_header = b64url(json.dumps({"alg": "RS256", "kid": "key-1", "typ": "JWT"}).encode())
claims = {"iss": "https://accounts.google.com", "aud": "https://gateway.example.com/webhooks/google", "email": "push@p.iam.gserviceaccount.com",
          "email_verified": True, "iat": 1698148950, "exp": 1698152550, "sub": "1234"}
write("FuzzJWS", "google-token", f"{google_header}.{b64url(json.dumps(claims).encode())}.{b64url(bytes(256))}")
none_header = b64url(b'{"alg":"none"}')
write("FuzzJWS", "none-alg", f"{none_header}.{b64url(b'{}')}.")
write("FuzzJWS", "four-parts", "e30.e30.e30.e30")
write("FuzzJWS", "padded", "e30=.e30.AA")
write("FuzzJWS", "base64-standard", base64.b64encode(bytes(range(40))).decode())
write("FuzzJWS", "base64-trailing-bits", "AB==")

# Pub/Sub: wrapped envelopes as Google documents them, each RTDN kind, and the envelope's odd corners.
for index, rtdn in enumerate(rtdns):
    write("FuzzPubSub", f"wrapped-{index}", envelope(json.dumps(rtdn).encode()))
    write("FuzzPubSub", f"unwrapped-{index}", json.dumps(rtdn))
write("FuzzPubSub", "no-data", envelope(None))
write("FuzzPubSub", "url-safe-data", json.dumps({"message": {"messageId": "1", "data": b64url(b'{"packageName":"p"}')}}))
write("FuzzPubSub", "ids-differ", json.dumps({"message": {"messageId": "1", "message_id": "2", "data": "e30="}}))
write("FuzzPubSub", "data-not-json", envelope(b"Hello Cloud Pub/Sub! Here is my message!"))

# Forms: Citcon CHOP IPNs and the percent-decoding edges.
for name, text in {"chop": citcon_form, "plus-and-escapes": "a=1+2%2B3&b=%E6%BC%A2&c", "bad-escape": "a=%G1",
                   "bad-utf8": "a=%FF%FE", "truncated-escape": "a=%4", "duplicate": "a=1&a=2", "empty-name": "=x",
                   "empty-pairs": "&&a=1&&", "equals-in-value": "a=b=c"}.items():
    write("FuzzForm", name, text)

# Senders: the first byte picks the path (FuzzSenders.swift): 0 Iaptic, 1 Citcon UPI, 2 Citcon form,
# 3 Alipay+ body, 4 Alipay+ Signature header, 5 Apple payloads, 6 Google RTDN, 7 Apple's whole accept.
write("FuzzSenders", "iaptic", b"\x00" + json.dumps(iaptic).encode())
write("FuzzSenders", "iaptic-test", b"\x00" + json.dumps({"type": "test", "password": "fuzz-secret"}).encode())
write("FuzzSenders", "citcon-upi", b"\x01" + json.dumps(citcon_upi).encode())
write("FuzzSenders", "citcon-form", b"\x02" + citcon_form.encode())
write("FuzzSenders", "alipay", b"\x03" + json.dumps(alipay).encode())
write("FuzzSenders", "alipay-failed", b"\x03" + json.dumps(alipay_failed).encode())
write("FuzzSenders", "alipay-signature", b"\x04algorithm=RSA256,keyVersion=1,signature=" + base64.b64encode(bytes(range(32))).replace(b"+", b"%2B").replace(b"/", b"%2F").replace(b"=", b"%3D"))
write("FuzzSenders", "apple", b"\x05" + json.dumps(dict(notification, transaction=transaction, renewal=renewal)).encode())
write("FuzzSenders", "apple-summary", b"\x05" + json.dumps(summary).encode())
write("FuzzSenders", "apple-external", b"\x05" + json.dumps(external).encode())
for index, rtdn in enumerate(rtdns):
    write("FuzzSenders", f"google-{index}", b"\x06" + json.dumps(rtdn).encode())
apple_jws = f"{apple_header}.{b64url(json.dumps(notification).encode())}.{b64url(bytes(range(64)))}"
write("FuzzSenders", "apple-source", b"\x07" + json.dumps({"signedPayload": apple_jws}).encode())
write("FuzzSenders", "apple-source-v1", b"\x07" + json.dumps({"notification_type": "DID_RENEW", "unified_receipt": {}}).encode())
