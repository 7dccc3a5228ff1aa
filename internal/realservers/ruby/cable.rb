# An ActionCable server (Debian's ruby-actioncable 6.1, run by puma) for
# the realservers tests: connections authenticated by ?token=s3cret, a
# RoomChannel that refuses the room "forbidden", GET /stats with the
# server's own counts (open connections, and those subscribed to two
# rooms), and POST /restart, ActionCable's own
# server restart: every client gets a disconnect with reconnect true.
#
# Usage: ruby cable.rb PORT [BEAT_SECONDS]
# BEAT_SECONDS replaces ActionCable's ping interval, 3 s.
require "logger"
require "json"
require "rack"
require "action_cable"
require "puma"
require "puma/configuration"
require "puma/launcher"

port = Integer(ARGV.fetch(0))
beat = Float(ARGV.fetch(1, "3"))
ActionCable::Server::Connections.send(:remove_const, :BEAT_INTERVAL)
ActionCable::Server::Connections.const_set(:BEAT_INTERVAL, beat)

STATS_LOCK = Mutex.new
SUBS = Hash.new(0) # connection => rooms confirmed

module ApplicationCable
  class Connection < ActionCable::Connection::Base
    identified_by :token

    def connect
      self.token = request.params["token"]
      reject_unauthorized_connection unless token == "s3cret"
    end

    def disconnect
      STATS_LOCK.synchronize { SUBS.delete(object_id) }
    end
  end
end

class RoomChannel < ActionCable::Channel::Base
  def subscribed
    return reject if params["room"] == "forbidden"
    stream_from "room:#{params["room"]}"
    id = connection.object_id
    STATS_LOCK.synchronize { SUBS[id] += 1 }
  end
end

server = ActionCable.server
server.config.cable = { "adapter" => "async" }
server.config.connection_class = -> { ApplicationCable::Connection }
server.config.disable_request_forgery_protection = true
server.config.logger = Logger.new(nil)
server.config.worker_pool_size = 4

app = Rack::Builder.new do
  map("/cable") { run server }
  map("/stats") do
    run(lambda do |_env|
      # Only open sockets: ActionCable's own restart halts the workers
      # that would have removed the connections it closed.
      open = server.connections.select { |c| c.send(:websocket).alive? }
      subscribed = STATS_LOCK.synchronize { open.count { |c| SUBS[c.object_id] >= 2 } }
      joined = open.size
      [200, { "content-type" => "application/json" }, [JSON.generate(joined: joined, subscribed: subscribed)]]
    end)
  end
  map("/restart") do
    run(lambda do |_env|
      server.restart
      [200, {}, ["restarted\n"]]
    end)
  end
end

conf = Puma::Configuration.new do |c|
  c.bind "tcp://127.0.0.1:#{port}"
  c.app app
  c.threads 4, 16
  c.workers 0
  c.log_requests false
  c.quiet
end
launcher = Puma::Launcher.new(conf, events: Puma::Events.null)
launcher.events.on_booted do
  puts "listening #{port}"
  $stdout.flush
end
launcher.run
