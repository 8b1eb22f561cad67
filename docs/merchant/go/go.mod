module example.com/leadgate-snippet

go 1.19

require github.com/golang-jwt/jwt/v4 v4.4.3
