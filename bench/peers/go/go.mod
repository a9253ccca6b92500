module tlskit.example/bench/peer

go 1.21
