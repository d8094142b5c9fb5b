// Command gem-contract writes the gemcontract package's extract of the original GEM's registry: the contract
// without prose, and the hashes of that prose's 5-word runs. `make gem-contract` runs it on the file the
// Makefile's GEM_CONTRACT_SOURCE names (GEM's registry, which no clone holds); the output is committed, so the
// tests never read GEM's file.
//
//	go run ./registry/gemcontract/cmd/gem-contract -from GEM-REGISTRY -to registry/gemcontract/testdata
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gemhq/gem/registry/gemcontract"
)

func main() {
	from := flag.String("from", "", "GEM's tools.registry.json (required)")
	to := flag.String("to", "", "the folder to write "+gemcontract.ContractFile+" and "+gemcontract.ShinglesFile+" to (required)")
	flag.Parse()
	if *from == "" || *to == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*from, *to); err != nil {
		fmt.Fprintln(os.Stderr, "gem-contract:", err)
		os.Exit(1)
	}
}

func run(from, to string) error {
	source, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	contract, shingles, err := gemcontract.Extract(source)
	if err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	for name, data := range map[string][]byte{gemcontract.ContractFile: contract, gemcontract.ShinglesFile: shingles} {
		if err := os.WriteFile(filepath.Join(to, name), data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("wrote %s (%d bytes) and %s (%d bytes) from %s\n", gemcontract.ContractFile, len(contract), gemcontract.ShinglesFile, len(shingles), from)
	return nil
}
