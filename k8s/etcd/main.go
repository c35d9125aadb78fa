// etcd for metalflow's tests and demo; same as go.etcd.io/etcd/server/v3's
// main.go.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
