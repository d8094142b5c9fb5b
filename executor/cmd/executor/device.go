package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/gemhq/gem/executor/deviceagent"
	"github.com/gemhq/gem/registry/gemlog"
)

func deviceFlagSet() (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("device", flag.ContinueOnError)
	return fs, fs.String("registry", "", "registry `FILE` of the tools this device serves (default $GEM_DEVICE_REGISTRY, else "+deviceagent.RegistryPathDefault+")")
}

// runDevice is `executor device`: serve this machine's tools to the hub until SIGINT or SIGTERM. It exits
// 1 when the hub refuses the device for good (its registration, its token), 2 on a bad configuration.
func runDevice(args []string, stdout, stderr io.Writer) int {
	fs, registryPath := deviceFlagSet()
	if code, ok := parseNoArgFlags(fs, "device", args, stdout, stderr); !ok {
		return code
	}
	log, err := gemlog.New(stderr, "device", os.Getenv("GEM_LOG_LEVEL"), os.Getenv("GEM_LOG_FORMAT"))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	cfg, err := deviceagent.ConfigFromEnv(os.Getenv)
	if err != nil {
		log.Error().Err(err).Msg("invalid configuration")
		return 2
	}
	if *registryPath != "" {
		cfg.RegistryPath = *registryPath
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	agent, err := deviceagent.New(ctx, cfg, log)
	if err != nil {
		log.Error().Err(err).Msg("device did not start")
		return 2
	}
	log.Info().Int("tools", len(agent.Tools())).Str("hub", cfg.HubURL).Msg("device starting")
	if err := agent.Run(ctx); err != nil {
		log.Error().Err(err).Msg("device stopped")
		if errors.Is(err, deviceagent.ErrRefused) {
			return 1
		}
		return 1
	}
	log.Info().Msg("device stopped")
	return 0
}
