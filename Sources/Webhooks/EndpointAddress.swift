#if canImport(Glibc)
import Glibc
#endif

/// What an endpoint's resolved address reaches, so that a merchant's webhook URL cannot turn Tollgate
/// into a client of its own network (SSRF): the loopback interface, the private networks around it, or
/// addresses no public host has. Delivery refuses all but `.public` unless configuration allows loopback
/// (development) or private networks (per endpoint); `.reserved` is never reached.
public enum EndpointAddressClass: String, Sendable, Equatable {
    case `public`
    case loopback
    /// RFC 1918, carrier-grade NAT (RFC 6598), link-local, IPv6 unique local and site-local.
    case privateNetwork = "private"
    /// Unspecified, multicast, broadcast, documentation, benchmarking, IETF and future-use ranges, and
    /// IPv6 forms that only tunnel to somewhere else (Teredo, discard).
    case reserved
}

public enum EndpointAddress {
    /// The class of an IPv4 or IPv6 literal (`192.0.2.1`, `::1`, `fe80::1`); nil for anything else.
    /// IPv6 forms that carry an IPv4 address (mapped, compatible, NAT64, 6to4) take that address's class.
    public static func classify(_ literal: String) -> EndpointAddressClass? {
        var v4 = in_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 {
            return classify(v4: withUnsafeBytes(of: v4.s_addr) { Array($0) })
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, literal, &v6) == 1 else { return nil }
        return classify(v6: withUnsafeBytes(of: v6) { Array($0) })
    }

    /// Four bytes in network order.
    public static func classify(v4 a: [UInt8]) -> EndpointAddressClass {
        guard a.count == 4 else { return .reserved }
        switch (a[0], a[1], a[2]) {
        case (127, _, _): return .loopback
        case (10, _, _), (172, 16...31, _), (192, 168, _), (100, 64...127, _): return .privateNetwork
        // Link-local: where clouds serve instance metadata (169.254.169.254), never a merchant's endpoint.
        case (0, _, _), (169, 254, _), (224...255, _, _): return .reserved
        case (192, 0, 0), (192, 0, 2), (192, 88, 99), (198, 18...19, _), (198, 51, 100), (203, 0, 113): return .reserved
        default: return .public
        }
    }

    /// Sixteen bytes in network order.
    public static func classify(v6 a: [UInt8]) -> EndpointAddressClass {
        guard a.count == 16 else { return .reserved }
        let zeros = { (range: Range<Int>) in a[range].allSatisfy { $0 == 0 } }
        if zeros(0..<15) { return a[15] == 1 ? .loopback : .reserved }
        // ::ffff:a.b.c.d (mapped), ::ffff:0:a.b.c.d (translated), ::a.b.c.d (compatible), 64:ff9b::a.b.c.d
        // (NAT64) and 64:ff9b:1::/48 (local-use NAT64, the IPv4 address in its last 32 bits).
        if zeros(0..<10), a[10] == 0xFF, a[11] == 0xFF { return classify(v4: Array(a[12..<16])) }
        if zeros(0..<8), a[8] == 0xFF, a[9] == 0xFF, a[10] == 0, a[11] == 0 { return classify(v4: Array(a[12..<16])) }
        if zeros(0..<12) { return classify(v4: Array(a[12..<16])) }
        if a[0..<12].elementsEqual([0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0]) { return classify(v4: Array(a[12..<16])) }
        if a[0..<6].elementsEqual([0x00, 0x64, 0xFF, 0x9B, 0x00, 0x01]) {
            // A private range of its own whatever it carries, so it is never public.
            let carried = classify(v4: Array(a[12..<16]))
            return carried == .public ? .privateNetwork : carried
        }
        // 2002:a.b.c.d::/48 (6to4).
        if a[0] == 0x20, a[1] == 0x02 { return classify(v4: Array(a[2..<6])) }
        switch (a[0], a[1]) {
        case (0xFC...0xFD, _): return .privateNetwork
        // fe80::/10 link-local is reserved (as 169.254/16); fec0::/10, the deprecated site-local, private.
        case (0xFE, 0x80...0xBF): return .reserved
        case (0xFE, 0xC0...0xFF): return .privateNetwork
        case (0xFF, _): return .reserved
        // 2001:0::/32 Teredo, 2001:db8::/32 documentation, 100::/64 discard.
        case (0x20, 0x01) where (a[2] == 0 && a[3] == 0) || (a[2] == 0x0D && a[3] == 0xB8): return .reserved
        case (0x01, 0x00) where zeros(2..<8): return .reserved
        default: return .public
        }
    }
}
