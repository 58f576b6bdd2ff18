import Testing
import Toolkit
import Verifiers

@Suite("Crypto helpers")
struct CryptoHelperTests {
    @Test("constant-time equality is plain equality in its results")
    func equality() async {
        #expect(ConstantTime.equals("secret", "secret"))
        #expect(!ConstantTime.equals("secret", "secreT"))
        #expect(!ConstantTime.equals("secret", "secret-longer"))
        #expect(!ConstantTime.equals("", "x"))
        #expect(ConstantTime.equals("", ""))
        #expect(ConstantTime.firstMatch("b", in: ["a", "b", "b"]) == 1)
        #expect(ConstantTime.firstMatch("c", in: ["a", "b"]) == nil)
    }

    @Test("SHA-256 matches the FIPS 180-2 test vector")
    func sha256() async {
        #expect(Digest.hex(Digest.sha256("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
