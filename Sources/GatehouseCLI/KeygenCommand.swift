import ArgumentParser
import Crypto
import FoundationEssentials

struct KeygenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Print a fresh random value for GATEHOUSE_SECRET_KEY (base64 of 32 bytes).")

    func run() throws {
        let key = SymmetricKey(size: .bits256)
        let bytes = key.withUnsafeBytes { Data($0) }
        print(bytes.base64EncodedString())
    }
}
