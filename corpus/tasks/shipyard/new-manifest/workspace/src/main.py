"""ledger-sync: reconciles ledger entries between the payments store and the bank feed."""


def main() -> None:
    print("ledger-sync starting")


if __name__ == "__main__":
    main()
