import Testing
import Webhooks

/// The address classes a webhook endpoint's resolved address falls in (delivery reaches only public ones
/// unless configuration allows loopback or private networks).
@Suite("Endpoint address classes")
struct EndpointAddressTests {
    @Test("each literal's class", arguments: [
        ("93.184.215.14", "public"), ("8.8.8.8", "public"), ("172.32.0.1", "public"), ("100.128.0.1", "public"), ("2606:4700::1111", "public"),
        ("127.0.0.1", "loopback"), ("127.255.255.254", "loopback"), ("::1", "loopback"), ("::ffff:127.0.0.1", "loopback"),
        ("10.1.2.3", "private"), ("172.16.0.1", "private"), ("172.31.255.255", "private"), ("192.168.1.1", "private"),
        ("100.64.0.1", "private"), ("169.254.169.254", "private"), ("fd00::1", "private"), ("fc00::1", "private"), ("fe80::1", "private"),
        ("fec0::1", "private"), ("::ffff:10.0.0.1", "private"), ("::ffff:169.254.169.254", "private"), ("64:ff9b::a9fe:a9fe", "private"),
        ("2002:c0a8:0101::1", "private"), ("::10.0.0.1", "private"),
        ("0.0.0.0", "reserved"), ("::", "reserved"), ("224.0.0.1", "reserved"), ("255.255.255.255", "reserved"), ("240.0.0.1", "reserved"),
        ("192.0.2.1", "reserved"), ("198.51.100.7", "reserved"), ("203.0.113.9", "reserved"), ("198.18.0.1", "reserved"),
        ("ff02::1", "reserved"), ("2001:db8::1", "reserved"), ("2001:0:4136:e378::1", "reserved"), ("100::1", "reserved"),
        ("::ffff:93.184.215.14", "public"), ("2002:5db8:d70e::1", "public"),
    ])
    func classes(literal: String, expected: String) {
        #expect(EndpointAddress.classify(literal)?.rawValue == expected)
    }

    @Test("a name, a malformed or a zone-scoped literal is not an address literal", arguments: [
        "example.com", "127.1", "1.2.3", "1.2.3.4.5", "256.0.0.1", "::1%lo", "[::1]", "", " 10.0.0.1", "0x7f.0.0.1",
    ])
    func notLiterals(text: String) {
        #expect(EndpointAddress.classify(text) == nil)
    }
}
